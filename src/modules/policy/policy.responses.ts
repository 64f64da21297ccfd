import { Schema, closedObject, count, id, nullableText, timestamp } from 'src/common/http/document-schema';
import { DIAGNOSTIC_CODES } from 'src/modules/policy/diagnostics';
import { PUBLICATION_SCHEMA } from 'src/modules/publication/publication.responses';

const sha256: Schema = { type: 'string', pattern: '^sha256:[a-f0-9]{64}$' };
const position: Schema = { type: 'integer', minimum: 1 };

/** The policy document (`operator_policy`); the revision fields appear together once a revision exists. */
export const POLICY_SCHEMA: Schema = {
  type: 'object',
  properties: {
    schema_version: { const: 1 },
    policy_id: id,
    workspace_id: id,
    cedar_text: { type: 'string' },
    draft_hash: sha256,
    draft_updated_at: timestamp,
    validation_state: { enum: ['not_run', 'valid', 'invalid'] },
    diagnostics: {
      type: 'array',
      items: {
        type: 'object',
        properties: { severity: { enum: ['error', 'warning'] }, code: { enum: Object.values(DIAGNOSTIC_CODES) }, message: { type: 'string' }, line: position, column: position },
        required: ['severity', 'code', 'message'],
        additionalProperties: false,
      },
    },
    publication: PUBLICATION_SCHEMA,
    current_revision_id: id,
    published_at: timestamp,
    published_hash: sha256,
  },
  required: ['schema_version', 'policy_id', 'workspace_id', 'cedar_text', 'draft_hash', 'draft_updated_at', 'validation_state', 'diagnostics', 'publication'],
  additionalProperties: false,
};

/** The publish result (`operator_policy_publish`). */
export const POLICY_PUBLISH_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  policy_id: id,
  revision_id: id,
  draft_hash: sha256,
  published_at: timestamp,
  publication: PUBLICATION_SCHEMA,
});

const decision: Schema = { enum: ['allow', 'deny'] };
const uid: Schema = closedObject({ type: { type: 'string' }, id: { type: 'string' } });
/** Most groups of flipped decisions a replay answers. */
export const MAX_CHANGE_GROUPS = 200;
const nullablePosition: Schema = { type: ['integer', 'null'], minimum: 1 };

/** The answer of POST /policy/replay. */
export const POLICY_REPLAY_SCHEMA: Schema = closedObject({
  draft_hash: sha256,
  window: closedObject({ from: timestamp, to: timestamp }),
  evaluated: count,
  unchanged: count,
  flips: closedObject({ allow_to_deny: count, deny_to_allow: count }),
  not_replayable: {
    ...count,
    description:
      'Receipts of the replayed span without a recorded request (or with a malformed one), counted among the newest `limit` receipts of the span only: the count probes at most `limit` receipts, however wide the window, plus the malformed requests read',
  },
  errors: count,
  changes: {
    type: 'array',
    maxItems: MAX_CHANGE_GROUPS,
    items: closedObject({
      action: { type: 'string' },
      resource: uid,
      principal_type: { type: 'string' },
      count: { type: 'integer', minimum: 1 },
      example: closedObject({
        receipt_id: id,
        key_id: nullableText,
        tool: nullableText,
        model: nullableText,
        recorded_decision: decision,
        replayed_decision: decision,
        determining_policies: { type: 'array', items: { type: 'string' } },
      }),
    }),
  },
});

/** The answer of POST /policy/explain. */
export const POLICY_EXPLAIN_SCHEMA: Schema = closedObject({
  against: { enum: ['draft', 'published'] },
  revision_id: nullableText,
  draft_hash: sha256,
  decision,
  determining_policies: { type: 'array', items: closedObject({ id: { type: 'string' }, line: nullablePosition, column: nullablePosition }) },
  errors: { type: 'array', items: closedObject({ policy_id: { type: 'string' }, message: { type: 'string' }, line: nullablePosition, column: nullablePosition }) },
});

const diffSide: Schema = closedObject({ ref: { type: 'string' }, revision_id: nullableText, draft_hash: sha256 });
const statement: Schema = closedObject({ id: { type: 'string' }, text: { type: 'string' } });

/** The answer of GET /policy/diff. */
export const POLICY_DIFF_SCHEMA: Schema = closedObject({
  from: diffSide,
  to: diffSide,
  added: { type: 'array', items: statement },
  removed: { type: 'array', items: statement },
  changed: { type: 'array', items: closedObject({ id: { type: 'string' }, diff: { type: 'string' } }) },
  unchanged: count,
});
