import { Schema, closedObject, count, id, nullableText, nullableTimestamp, text, timestamp } from 'src/common/http/document-schema';
import { refusalSchema } from 'src/modules/workers/runs/refusals';
import { RUN_SCHEMA } from 'src/modules/workers/runs/run.document';
import {
  CAPABILITIES_SCHEMA,
  environmentClass,
  environmentClasses,
  LIMIT_SCHEMA,
  pageOf,
  prefixed,
  version,
  withCapabilities,
} from 'src/modules/workers/shared.responses';

/* The run schemas (the run itself is in run.document.ts, beside its mapper). */
export { RUN_SCHEMA };

/** The body of a typed refusal: 402 and 409 pre-allocation refusals, 503 when the orchestrator cannot be told. */
export const REFUSAL_BODY_SCHEMA: Schema = closedObject({ detail: refusalSchema });

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
  refusal: { ...refusalSchema, type: ['object', 'null'] },
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
