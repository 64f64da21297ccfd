import { Schema, closedObject, count, id, nullableText, nullableTimestamp, strings, text, timestamp } from 'src/common/http/document-schema';
import {
  CAPABILITIES_SCHEMA,
  environmentClass,
  environmentClasses,
  executionMode,
  flag,
  pageOf,
  prefixed,
  preset,
  version,
  withCapabilities,
} from 'src/modules/workers/shared.responses';

const digest: Schema = { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' };
const draftDigest: Schema = { ...digest, type: ['string', 'null'], description: 'Null while a draft.' };
const lifecycle: Schema = { enum: ['draft', 'published', 'retired'] };
const revisionState: Schema = { enum: ['draft', 'published', 'superseded'] };

/** The operator a definition was created by. */
const createdBy = closedObject({ kind: { const: 'operator' }, id, display_name: nullableText });

// Worker and workflow definitions and their revisions

/** The limits of a revision (a new draft gets the spec defaults). */
export const LIMITS_SCHEMA: Schema = closedObject({
  run_timeout_seconds: count,
  approval_window_seconds: count,
  infrastructure_retries: count,
  ambiguous_effect_retries: count,
  artifact_retention_days: count,
  concurrency: count,
  network_policy: text,
  session_mode: text,
  production_writes_require_approval: flag,
});

/** `POST /worker-drafts`: a proposal that grants nothing and is not stored. */
export const DRAFT_SCHEMA: Schema = closedObject({
  schema_version: version,
  workspace_id: id,
  authority: { const: 'proposal_only' },
  proposal: closedObject({
    slug: text,
    display_name: text,
    description: text,
    template_id: nullableText,
    environment_classes: environmentClasses,
    instructions: text,
    execution_mode: executionMode,
    permission_preset: preset,
    limits: LIMITS_SCHEMA,
  }),
  permitted_environment_classes: environmentClasses,
  notes: strings,
});

/** The 409 of drafting while the workspace assistant is off. */
export const ASSISTANT_DENIED_SCHEMA: Schema = closedObject({ detail: closedObject({ code: { const: 'denied' }, message: text, href: text }) });

/** The 409 of a publish whose digest does not match: the revision and the digest expected, no `code`. */
export const DIGEST_MISMATCH_SCHEMA: Schema = closedObject({ detail: closedObject({ revision_id: id, expected: digest }) });

/** Create (Worker or workflow): the new definition and its draft v1 (docs/workers.md: ids instead of the spec's nulls). */
export const CREATED_SCHEMA: Schema = closedObject({
  schema_version: version,
  resource_id: id,
  before: { type: 'null' },
  after: closedObject({ lifecycle: { const: 'draft' }, draft_revision_id: id, revision_number: { const: 1 } }),
});

/** Patch (Worker or workflow): the open draft before (none after a publish) and after. */
export const PATCHED_SCHEMA: Schema = closedObject({
  schema_version: version,
  resource_id: id,
  before: closedObject({ draft_revision_id: nullableText, revision_number: { type: ['integer', 'null'], minimum: 1 } }),
  after: closedObject({ draft_revision_id: id, revision_number: { type: 'integer', minimum: 1 } }),
});

const published = {
  lifecycle: { const: 'published' },
  published_revision_id: id,
  revision_number: { type: 'integer', minimum: 1 },
  revision_digest: digest,
};
const publishedBefore = closedObject({ lifecycle, published_revision_id: nullableText });

/** Publishing a Worker revision. */
export const WORKER_PUBLISHED_SCHEMA: Schema = closedObject({
  schema_version: version,
  resource_id: id,
  before: publishedBefore,
  after: closedObject({ ...published, permission_policy_revision_id: id }),
});

/** Publishing a workflow revision. */
export const WORKFLOW_PUBLISHED_SCHEMA: Schema = closedObject({
  schema_version: version,
  resource_id: id,
  before: publishedBefore,
  after: closedObject(published),
});

/** A Worker definition. */
export const WORKER_SCHEMA: Schema = closedObject({
  schema_version: version,
  worker_id: prefixed('wkr'),
  workspace_id: id,
  env: { enum: ['dev', 'stage', 'prod'] },
  slug: text,
  display_name: text,
  description: nullableText,
  agent_passport_id: text,
  lifecycle,
  draft_revision_id: nullableText,
  published_revision_id: nullableText,
  latest_revision_number: { type: 'integer', minimum: 1 },
  template_id: nullableText,
  created_by: createdBy,
  created_at: timestamp,
  updated_at: timestamp,
});

const REVISION_FIELDS: Record<string, Schema> = {
  schema_version: version,
  revision_id: prefixed('wrv'),
  worker_id: prefixed('wkr'),
  workspace_id: id,
  revision_number: { type: 'integer', minimum: 1 },
  state: revisionState,
  revision_digest: draftDigest,
  permission_preset: closedObject({ preset, policy_revision_id: prefixed('ppr') }),
  execution_mode: executionMode,
  limits: LIMITS_SCHEMA,
  allowed_capabilities: strings,
  ui_actions: strings,
  created_at: timestamp,
  published_at: nullableTimestamp,
};

/** A Worker revision: the fixed fields plus the body fields that are set, flattened. */
export const REVISION_SCHEMA: Schema = {
  type: 'object',
  properties: {
    ...REVISION_FIELDS,
    instructions: text,
    runtime_adapter: text,
    model_constraints: { type: 'object', description: 'Free-form.' },
    environment_requests: { type: 'array', items: closedObject({ environment_class: environmentClass }) },
    connections: strings,
    session_profile_ids: strings,
    output_contract: { type: 'object', description: 'Free-form.' },
  },
  required: Object.keys(REVISION_FIELDS),
  additionalProperties: false,
};

export const WORKER_LIST_SCHEMA: Schema = pageOf('workers', WORKER_SCHEMA);

export const WORKER_ANSWER_SCHEMA: Schema = withCapabilities('worker', WORKER_SCHEMA);

export const REVISIONS_SCHEMA: Schema = closedObject({ revisions: { type: 'array', items: REVISION_SCHEMA }, capabilities: CAPABILITIES_SCHEMA });

// Workflows

/** A workflow definition. */
export const WORKFLOW_SCHEMA: Schema = closedObject({
  schema_version: version,
  workflow_id: prefixed('wfl'),
  workspace_id: id,
  slug: text,
  display_name: text,
  description: nullableText,
  lifecycle,
  draft_revision_id: nullableText,
  published_revision_id: nullableText,
  latest_revision_number: { type: 'integer', minimum: 1 },
  created_by: createdBy,
  created_at: timestamp,
  updated_at: timestamp,
});

export const WORKFLOW_LIST_SCHEMA: Schema = pageOf('workflows', WORKFLOW_SCHEMA);

export const WORKFLOW_ANSWER_SCHEMA: Schema = withCapabilities('workflow', WORKFLOW_SCHEMA);

/** A workflow revision: its steps and the trigger types the entitlement permits. */
export const WORKFLOW_REVISION_SCHEMA: Schema = closedObject({
  schema_version: version,
  revision_id: prefixed('wfr'),
  workflow_id: prefixed('wfl'),
  workspace_id: id,
  revision_number: { type: 'integer', minimum: 1 },
  state: revisionState,
  revision_digest: draftDigest,
  steps: {
    type: 'array',
    items: {
      type: 'object',
      properties: { step_id: id, worker_id: id, depends_on: strings, condition: { type: 'string', description: 'CEL; absent when unconditional.' } },
      required: ['step_id', 'worker_id', 'depends_on'],
      additionalProperties: false,
    },
  },
  permitted_trigger_types: { type: 'array', items: { enum: ['manual', 'schedule', 'webhook'] } },
  created_at: timestamp,
  published_at: nullableTimestamp,
});

export const WORKFLOW_REVISIONS_SCHEMA: Schema = closedObject({
  revisions: { type: 'array', items: WORKFLOW_REVISION_SCHEMA },
  capabilities: CAPABILITIES_SCHEMA,
});
