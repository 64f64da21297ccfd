import { Schema, closedObject, count, id, nullableText, strings, text, timestamp } from 'src/common/http/document-schema';
import { ACTION_CLASSES, ENVIRONMENT_CLASSES, PLAN_NAMES, TEMPLATE_CLASSES } from 'src/modules/workers/workers.data';
import {
  CAPABILITIES_SCHEMA,
  environmentClass,
  environmentClasses,
  executionMode,
  flag,
  LIMIT_SCHEMA,
  preset,
  version,
} from 'src/modules/workers/shared.responses';

/* The read-only reference documents of the Workers surface. */

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
