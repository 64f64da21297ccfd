import { Env } from 'src/common/access/context';
import { formatTime, formatTimeRequired } from 'src/common/time/time';

export type KeyStatus = 'active' | 'revoked' | 'expired';

/** The stored key (never the secret: only its sha256 and last4). */
export interface KeyRow {
  id: string;
  workspace_id: string;
  agent_id: string;
  prefix: string;
  key_hash: string;
  last4: string;
  allowed_models: string[];
  allowed_tools: string[];
  tools_mode: string;
  budget_micros_usd_month: string | null;
  rpm: string | null;
  tpm: string | null;
  scopes: string[];
  attributes: Record<string, unknown>;
  expires_at: Date | null;
  revoked_at: Date | null;
  created_at: Date;
}

const COLUMNS = [
  'id', 'workspace_id', 'agent_id', 'prefix', 'key_hash', 'last4', 'allowed_models', 'allowed_tools', 'tools_mode',
  'budget_micros_usd_month', 'rpm', 'tpm', 'scopes', 'attributes', 'expires_at', 'revoked_at', 'created_at',
];

/** The select list of a KeyRow, optionally qualified by a table alias. */
export const keyColumns = (alias?: string) => COLUMNS.map((c) => (alias ? `${alias}.${c}` : c)).join(', ');

/**
 * The key status rule, computed at read time: revoked wins over expired; expired from `expires_at`
 * on. `keyStatus` in code and `keyStatusSql` in a statement are its only two spellings.
 */
export function keyStatus(row: Pick<KeyRow, 'revoked_at' | 'expires_at'>, now: Date): KeyStatus {
  if (row.revoked_at) return 'revoked';
  if (row.expires_at && row.expires_at.getTime() <= now.getTime()) return 'expired';
  return 'active';
}

/**
 * `keyStatus` as a SQL expression over `virtual_keys` (optionally aliased). The clock is
 * `clock_timestamp()`, the wall clock at evaluation like `new Date()` in code, never `now()`: inside
 * a transaction `now()` is the moment it began, so a key that expired while the transaction waited
 * for a lock would still count as active.
 */
export function keyStatusSql(alias?: string): string {
  const c = (column: string) => (alias ? `${alias}.${column}` : column);
  return `(CASE WHEN ${c('revoked_at')} IS NOT NULL THEN 'revoked' WHEN ${c('expires_at')} <= clock_timestamp() THEN 'expired' ELSE 'active' END)`;
}

const int = (value: string | null) => (value === null ? null : Number(value));

/** The operator-facing key (spec section 2, Virtual key); no secret, no digest. */
export function toKeyDocument(row: KeyRow, now: Date) {
  return {
    key_id: row.id,
    prefix: row.prefix,
    status: keyStatus(row, now),
    agent_id: row.agent_id,
    last4: row.last4,
    allowed_models: row.allowed_models,
    allowed_tools: row.allowed_tools,
    tools_mode: row.tools_mode,
    budget_micros_usd_month: int(row.budget_micros_usd_month),
    rpm: int(row.rpm),
    tpm: int(row.tpm),
    scopes: row.scopes,
    expires_at: formatTime(row.expires_at),
    attributes: row.attributes,
    created_at: formatTimeRequired(row.created_at),
    revoked_at: formatTime(row.revoked_at),
  };
}

/**
 * The key context the gateway evaluates: what `{prefix}:key:{hash}` holds and what
 * `GET /internal/v1/keys/{hash}` returns. The hot path only ever holds active keys (revoke
 * deletes the entry, expiry removes it at `expires_at`).
 */
export function toKeyContext(row: KeyRow & { env: Env }, now: Date) {
  return {
    schema_version: 1,
    key_id: row.id,
    workspace_id: row.workspace_id,
    env: row.env,
    agent_id: row.agent_id,
    prefix: row.prefix,
    status: keyStatus(row, now),
    allowed_models: row.allowed_models,
    allowed_tools: row.allowed_tools,
    tools_mode: row.tools_mode,
    budget_micros_usd_month: int(row.budget_micros_usd_month),
    rpm: int(row.rpm),
    tpm: int(row.tpm),
    scopes: row.scopes,
    attributes: row.attributes,
    expires_at: formatTime(row.expires_at),
    revoked_at: formatTime(row.revoked_at),
  };
}
