import { Schema, closedObject, count, id, nullableText, nullableTimestamp, strings, text, timestamp } from 'src/common/http/document-schema';
import {
  ACTION_CLASSES,
  ENVIRONMENT_CLASSES,
  EXECUTION_MODE_NAMES,
  PLAN_NAMES,
  PRESET_NAMES,
  TEMPLATE_CLASSES,
} from 'src/modules/workers/workers.data';

export const version: Schema = { const: 1 };
export const environmentClass: Schema = { enum: [...ENVIRONMENT_CLASSES] };
export const environmentClasses: Schema = { type: 'array', items: environmentClass };
const flag: Schema = { type: 'boolean' };
const executionMode: Schema = { enum: [...EXECUTION_MODE_NAMES] };
const preset: Schema = { enum: [...PRESET_NAMES] };
const digest: Schema = { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' };
const draftDigest: Schema = { ...digest, type: ['string', 'null'], description: 'Null while a draft.' };
const lifecycle: Schema = { enum: ['draft', 'published', 'retired'] };
const revisionState: Schema = { enum: ['draft', 'published', 'superseded'] };
export const prefixed = (prefix: string): Schema => ({ type: 'string', pattern: `^${prefix}_` });
const nextCursor: Schema = { type: ['string', 'null'], description: 'Null on the last page.' };

/** Every workspace read's `capabilities` block, from the caller's role and the frozen flag. */
export const CAPABILITIES_SCHEMA: Schema = closedObject({
  can_read: flag,
  can_author: flag,
  can_run: flag,
  can_publish: flag,
  can_take_control: flag,
  can_manage_billing: flag,
});

/** A limit: `{kind: limited, value}` or `{kind: unlimited}` (no value). */
export const LIMIT_SCHEMA: Schema = {
  oneOf: [closedObject({ kind: { const: 'limited' }, value: count }), closedObject({ kind: { const: 'unlimited' } })],
};

/** The operator a definition was created by. */
const createdBy = closedObject({ kind: { const: 'operator' }, id, display_name: nullableText });

/** A page of `items` under `key`, with the next cursor and the capabilities block. */
export const pageOf = (key: string, items: Schema): Schema =>
  closedObject({ [key]: { type: 'array', items }, next_cursor: nextCursor, capabilities: CAPABILITIES_SCHEMA });

/** One document under `key` with the capabilities block. */
export const withCapabilities = (key: string, document: Schema): Schema => closedObject({ [key]: document, capabilities: CAPABILITIES_SCHEMA });

// Reference documents

/** `GET /worker-templates`: every template with its availability; a gated one carries its gate. */
export const TEMPLATES_SCHEMA: Schema = closedObject({
  schema_version: version,
  templates: {
    type: 'array',
    items: closedObject({
      template: closedObject({
        schema_version: version,
        template_id: id,
        name: text,
        summary: text,
        environment_class: { enum: [...TEMPLATE_CLASSES] },
        demo_supported: flag,
        default_execution_mode: executionMode,
        default_permission_preset: preset,
        suggested_instructions: text,
      }),
      availability: closedObject({
        status: { enum: ['available', 'gated'] },
        reason: nullableText,
        gated_by_environment_classes: environmentClasses,
      }),
    }),
  },
});

const CLASS_AVAILABILITY = {
  environment_class: environmentClass,
  status: { enum: ['available', 'not_in_plan', 'not_runnable'] },
  reason: nullableText,
  runnable: flag,
  permitted_by_plan: flag,
};

/** `GET /worker-environments`: each class against the deployment and the plan, with its active runs. */
export const ENVIRONMENTS_SCHEMA: Schema = closedObject({
  schema_version: version,
  workspace_id: id,
  plan: { enum: [...PLAN_NAMES] },
  environments: { type: 'array', items: closedObject({ ...CLASS_AVAILABILITY, active_runs: count }) },
  capabilities: CAPABILITIES_SCHEMA,
});

/** `GET /workers-entitlements`: plan, limits, usage counted from run rows, the ladder (no money field). */
export const ENTITLEMENTS_SCHEMA: Schema = closedObject({
  schema_version: version,
  workspace_id: id,
  plan: { enum: [...PLAN_NAMES] },
  included_runs: LIMIT_SCHEMA,
  runs_remaining: LIMIT_SCHEMA,
  permitted_environment_classes: environmentClasses,
  concurrency: LIMIT_SCHEMA,
  retention_days: LIMIT_SCHEMA,
  schedules_allowed: flag,
  webhooks_allowed: flag,
  trial_allowance: closedObject({ demo_runs: LIMIT_SCHEMA, demo_runs_remaining: LIMIT_SCHEMA }),
  card_on_file: flag,
  usage: closedObject({ runs_started: count, demo_runs_started: count, active_runs: count, active_environments: count, period_start: timestamp }),
  class_availability: { type: 'array', items: closedObject(CLASS_AVAILABILITY) },
  plan_ladder: {
    type: 'array',
    items: closedObject({
      plan: { enum: [...PLAN_NAMES] },
      included_runs: LIMIT_SCHEMA,
      permitted_environment_classes: environmentClasses,
      concurrency: LIMIT_SCHEMA,
      retention_days: LIMIT_SCHEMA,
      schedules_allowed: flag,
      webhooks_allowed: flag,
      trial_demo_runs: LIMIT_SCHEMA,
      amounts_are_configuration: { const: true },
    }),
  },
  capabilities: CAPABILITIES_SCHEMA,
});

const statements: Schema = { type: 'array', items: closedObject({ statement: text, capability_hint: text }) };
const compiledEntries: Schema = {
  type: 'array',
  items: closedObject({
    capability_class: { enum: ['verified_capability', 'computer_use_action'] },
    environment_class: { enum: [...ENVIRONMENT_CLASSES, null] },
    action: text,
    description: text,
    semantic_guarantee: { enum: ['read_only', 'reversible', 'irreversible'] },
    high_impact: flag,
    allowed_domains: strings,
  }),
};

/** `GET /permission-presets`: the three presets compiled from the workspace's reviewed tool descriptions. */
export const PRESETS_SCHEMA: Schema = closedObject({
  schema_version: version,
  workspace_id: id,
  presets: {
    type: 'array',
    items: closedObject({
      schema_version: version,
      workspace_id: id,
      preset,
      display_name: text,
      summary: text,
      default_for_new_workers: flag,
      allows: statements,
      forbids: statements,
      compiled_capabilities: closedObject({ allowed: compiledEntries, forbidden: compiledEntries }),
      unlisted_capability_default: { const: 'denied' },
      cedar_policy_ids: strings,
    }),
  },
  capabilities: CAPABILITIES_SCHEMA,
});

/** `GET /execution-modes`: the three modes (exactly one `is_default`) with their approval tables. */
export const MODES_SCHEMA: Schema = closedObject({
  schema_version: version,
  workspace_id: id,
  modes: {
    type: 'array',
    items: closedObject({
      schema_version: version,
      mode: executionMode,
      is_default: flag,
      display_name: text,
      summary: text,
      approval_requirements: {
        type: 'array',
        items: closedObject({
          action_class: { enum: [...ACTION_CLASSES] },
          approval: { enum: ['not_required', 'required', 'required_in_production', 'forbidden_unattended'] },
          note: text,
        }),
      },
      high_impact_ui_action_policy: { const: 'requires_human_control' },
      limits_enforced: { const: 'always' },
      approval_timeout_seconds: count,
    }),
  },
  capabilities: CAPABILITIES_SCHEMA,
});

/** `GET /workers-doctor`: each dependency probed now; `ok` when every one is `ok`. */
export const DOCTOR_SCHEMA: Schema = closedObject({
  schema_version: version,
  workspace_id: id,
  checked_at: timestamp,
  ok: flag,
  dependencies: {
    type: 'array',
    items: closedObject({
      name: { enum: ['database', 'hot_path', 'orchestrator', 'assistant', 'agent_passports'] },
      state: { enum: ['ok', 'not_configured', 'unreachable', 'degraded', 'disabled', 'missing'] },
      detail: text,
    }),
  },
  capabilities: CAPABILITIES_SCHEMA,
});

// Worker definitions and revisions

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
export const WORKFLOW_PUBLISHED_SCHEMA: Schema = closedObject({ schema_version: version, resource_id: id, before: publishedBefore, after: closedObject(published) });

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
