import { Schema, closedObject, nullableTimestamp, strings } from 'src/common/http/document-schema';
import { SCOPES } from 'src/modules/keys/dto/mint-key.dto';

const limit: Schema = { type: ['integer', 'null'], minimum: 0 };

/** What a key document and the key context share (core spec section 2, Virtual key). */
const KEY_FIELDS: Record<string, Schema> = {
  key_id: { type: 'string' },
  prefix: { enum: ['ob_live', 'ob_test'] },
  status: { enum: ['active', 'revoked', 'expired'] },
  agent_id: { type: 'string' },
  allowed_models: strings,
  allowed_tools: strings,
  tools_mode: { enum: ['full', 'progressive'] },
  budget_micros_usd_month: limit,
  rpm: limit,
  tpm: limit,
  scopes: { type: 'array', items: { enum: [...SCOPES] } },
  attributes: { type: 'object', description: 'Free-form, carried into the key context.' },
  expires_at: nullableTimestamp,
  revoked_at: nullableTimestamp,
};

const PREVIOUS_SECRET: Schema = {
  oneOf: [
    { type: 'null' },
    closedObject({ last4: { type: 'string' }, valid_until: { type: 'string', format: 'date-time', description: 'When the replaced secret stops (or stopped) being accepted.' } }),
  ],
  description: 'The secret the last rotation replaced; null for a key never rotated.',
};

/** A virtual key as operators see it: never the secret or its digest. */
export const KEY_SCHEMA: Schema = closedObject({
  ...KEY_FIELDS,
  last4: { type: 'string' },
  created_at: { type: 'string', format: 'date-time' },
  rotated_at: nullableTimestamp,
  previous: PREVIOUS_SECRET,
  last_used_at: { ...nullableTimestamp, description: 'The latest `occurred_at` of the key\'s usage events; null before the first.' },
  idle: { type: 'boolean', description: 'No usage event for KEY_IDLE_DAYS (from creation for a key never used).' },
});

/** GET one key: the document plus whether Redis agrees with it yet. */
export const KEY_DETAIL_SCHEMA: Schema = closedObject({
  ...KEY_SCHEMA.properties,
  hot_path: { enum: ['published', 'removed', 'pending'], description: '`pending` until Redis agrees with the database; then `published` (active key) or `removed`.' },
});

/** The mint and rotate answer: the key plus its (new) plaintext, returned this once. */
export const MINTED_KEY_SCHEMA: Schema = closedObject({ ...KEY_SCHEMA.properties, plaintext: { type: 'string', pattern: '^ob_(live|test)_[A-Za-z0-9_-]+$' } });

export const KEY_LIST_SCHEMA: Schema = closedObject({ keys: { type: 'array', items: KEY_SCHEMA } });

/** The key context the gateway evaluates (`GET /internal/v1/keys/{key_hash}`, the hot-path entry). */
export const KEY_CONTEXT_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  workspace_id: { type: 'string' },
  env: { enum: ['dev', 'stage', 'prod'] },
  ...KEY_FIELDS,
  valid_until: { ...nullableTimestamp, description: 'For a secret replaced by a rotation: when it stops being accepted; null for the current secret.' },
});
