import { Schema, closedObject, count, id, nullableText, nullableTimestamp, text, timestamp } from 'src/common/http/document-schema';
import { RUN_STATES } from 'src/modules/workers/runs/dto/runs.dto';
import { CAPABILITIES_SCHEMA, environmentClass, environmentClasses, LIMIT_SCHEMA, pageOf, prefixed, version, withCapabilities } from 'src/modules/workers/workers.responses';

const REFUSAL_FIELDS: Record<string, Schema> = {
  code: {
    enum: [
      'worker_not_published',
      'demo_not_supported',
      'environment_unavailable',
      'environment_not_in_plan',
      'run_allowance_exhausted',
      'trial_exhausted',
      'concurrency_limit_reached',
      'worker_concurrency_limit_reached',
      'orchestrator_not_configured',
      'orchestrator_unreachable',
      'orchestrator_refused',
    ],
  },
  reason: { enum: ['not_published', 'template', 'environment', 'entitlement', 'concurrency', 'orchestration_unavailable'] },
  what: text,
  why: text,
  suggested_fix: text,
  fix_action: { const: 'upgrade_plan' },
  rule_reference: text,
  run_id: { type: 'string', description: 'The run recorded as failed, on a refused hand-off.' },
  set_by: { const: 'control' },
};
const REFUSAL_REQUIRED = ['code', 'reason', 'what', 'why', 'suggested_fix', 'set_by'];

/** A typed Workers refusal (connections spec section 2). */
const REFUSAL_SCHEMA: Schema = { type: 'object', properties: REFUSAL_FIELDS, required: REFUSAL_REQUIRED, additionalProperties: false };

/** The body of a typed refusal: 402 and 409 pre-allocation refusals, 503 when the orchestrator cannot be told. */
export const REFUSAL_BODY_SCHEMA: Schema = closedObject({ detail: REFUSAL_SCHEMA });

/** A run or demo run. */
export const RUN_SCHEMA: Schema = closedObject({
  schema_version: version,
  run_id: prefixed('run'),
  workspace_id: id,
  kind: { enum: ['run', 'demo'] },
  worker_id: nullableText,
  revision_id: nullableText,
  template_id: nullableText,
  status: { enum: [...RUN_STATES] },
  environment_classes: environmentClasses,
  session_profile_id: nullableText,
  failure: {
    type: ['object', 'null'],
    description: 'The refusal a failed hand-off recorded; null otherwise.',
    properties: { ...REFUSAL_FIELDS, occurred_at: timestamp },
    required: [...REFUSAL_REQUIRED, 'occurred_at'],
    additionalProperties: false,
  },
  control_lease: {
    type: ['object', 'null'],
    description: 'The unexpired control lease; null when none is held.',
    properties: { lease_id: prefixed('lse'), holder_user_id: id, expires_at: timestamp },
    required: ['lease_id', 'holder_user_id', 'expires_at'],
    additionalProperties: false,
  },
  created_by: closedObject({ kind: { const: 'operator' }, id }),
  created_at: timestamp,
  updated_at: timestamp,
  ended_at: nullableTimestamp,
});

/** A run answer: starts, reads and controls. */
export const RUN_ANSWER_SCHEMA: Schema = withCapabilities('run', RUN_SCHEMA);

export const RUN_LIST_SCHEMA: Schema = pageOf('runs', RUN_SCHEMA);

/** `POST /run-estimates`: what a start would need now and the refusal it would meet. */
export const ESTIMATE_SCHEMA: Schema = closedObject({
  schema_version: version,
  workspace_id: id,
  kind: { enum: ['run', 'demo'] },
  worker_id: nullableText,
  template_id: nullableText,
  environment_classes: environmentClasses,
  timeout_seconds: count,
  max_attempts: { type: 'integer', minimum: 1 },
  allowance_remaining: LIMIT_SCHEMA,
  would_start: { type: 'boolean' },
  refusal: { ...REFUSAL_SCHEMA, type: ['object', 'null'] },
  capabilities: CAPABILITIES_SCHEMA,
});

export const ARTIFACT_ANSWER_SCHEMA: Schema = withCapabilities(
  'artifact',
  closedObject({
    schema_version: version,
    artifact_id: id,
    run_id: id,
    workspace_id: id,
    name: text,
    media_type: text,
    size_bytes: count,
    digest: text,
    created_at: timestamp,
    expires_at: timestamp,
  }),
);

/** A session profile: identity and status only, never session material. */
export const SESSION_PROFILE_SCHEMA: Schema = closedObject({
  schema_version: version,
  session_profile_id: prefixed('wsp'),
  workspace_id: id,
  name: text,
  environment_class: environmentClass,
  description: nullableText,
  status: { enum: ['active', 'revoked'] },
  created_by: closedObject({ kind: { const: 'operator' }, id }),
  created_at: timestamp,
  revoked_at: nullableTimestamp,
});

export const SESSION_PROFILE_ANSWER_SCHEMA: Schema = withCapabilities('session_profile', SESSION_PROFILE_SCHEMA);

export const SESSION_PROFILE_LIST_SCHEMA: Schema = pageOf('session_profiles', SESSION_PROFILE_SCHEMA);
