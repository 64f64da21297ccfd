import { Env } from 'src/platform/access/context';
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
  /** The secret the last rotation replaced: valid until `previous_valid_until` (null: never rotated). */
  previous_key_hash: string | null;
  previous_last4: string | null;
  previous_valid_until: Date | null;
  rotated_at: Date | null;
}

/** A KeyRow with what the operator's document adds: the latest usage event's time. */
export type KeyDocumentRow = KeyRow & { last_used_at: Date | null };

const COLUMNS = [
  'id', 'workspace_id', 'agent_id', 'prefix', 'key_hash', 'last4', 'allowed_models', 'allowed_tools', 'tools_mode',
  'budget_micros_usd_month', 'rpm', 'tpm', 'scopes', 'attributes', 'expires_at', 'revoked_at', 'created_at',
  'previous_key_hash', 'previous_last4', 'previous_valid_until', 'rotated_at',
];

/** The select list of a KeyRow, optionally qualified by a table alias. */
export const keyColumns = (alias?: string) => COLUMNS.map((c) => (alias ? `${alias}.${c}` : c)).join(', ');

/** The select (or RETURNING) list of a KeyDocumentRow: `last_used_at` from `virtual_key_usage`. */
export const keyDocumentColumns = (alias?: string) =>
  `${keyColumns(alias)}, (SELECT u.last_used_at FROM virtual_key_usage u WHERE u.key_id = ${alias ?? 'virtual_keys'}.id) AS last_used_at`;

const DAY_MS = 86_400_000;

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

/**
 * The operator-facing key (spec section 2, Virtual key); no secret, no digest. `idle`: no usage
 * event for `idleDays` (counted from creation for a key never used).
 */
export function toKeyDocument(row: KeyDocumentRow, now: Date, idleDays: number) {
  const lastActivity = row.last_used_at ?? row.created_at;
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
    rotated_at: formatTime(row.rotated_at),
    previous: row.previous_last4 === null ? null : { last4: row.previous_last4, valid_until: formatTimeRequired(row.previous_valid_until!) },
    last_used_at: formatTime(row.last_used_at),
    idle: lastActivity.getTime() <= now.getTime() - idleDays * DAY_MS,
  };
}

/**
 * The key context the gateway evaluates: what `{prefix}:key:{hash}` holds and what
 * `GET /internal/v1/keys/{hash}` returns. The hot path only ever holds active keys (revoke
 * deletes the entry, expiry removes it at `expires_at`). For the secret a rotation replaced
 * (`previous`), `valid_until` is when it stops being accepted; null for the current secret.
 */
export function toKeyContext(row: KeyRow & { env: Env; previous?: boolean }, now: Date) {
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
    valid_until: row.previous ? formatTime(row.previous_valid_until) : null,
  };
}
