import { closedObject, Schema } from 'src/common/http/document-schema';
import { DIAGNOSTIC_CODES } from 'src/modules/policy/diagnostics';
import { PUBLICATION_SCHEMA } from 'src/modules/publication/publication.responses';

const id: Schema = { type: 'string' };
const timestamp: Schema = { type: 'string', format: 'date-time' };
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
