/**
 * The reviewed, deployment-wide facts of the Workers surface: environment classes, templates,
 * execution modes, plans and the defaults of a new Worker. Amounts are configuration, not money.
 */

/** Every environment class a Worker may request (the five template classes plus `code`). */
export const ENVIRONMENT_CLASSES = ['development', 'browser', 'research', 'mobile', 'desktop', 'code'] as const;
export type EnvironmentClass = (typeof ENVIRONMENT_CLASSES)[number];

/** The classes templates are filed under (the `category` filter of the template list). */
export const TEMPLATE_CLASSES = ['development', 'browser', 'research', 'mobile', 'desktop'] as const;

/**
 * Classes this deployment can run. Mobile and desktop need device and virtual-desktop pools the
 * deployment does not ship, so templates on them are returned gated.
 */
export const RUNNABLE_CLASSES: ReadonlySet<EnvironmentClass> = new Set(['development', 'browser', 'research', 'code']);

export interface Template {
  template_id: string;
  name: string;
  summary: string;
  environment_class: (typeof TEMPLATE_CLASSES)[number];
  demo_supported: boolean;
  default_execution_mode: ExecutionModeName;
  default_permission_preset: PresetName;
  suggested_instructions: string;
}

export const TEMPLATES: readonly Template[] = [
  {
    template_id: 'tpl_code_review',
    name: 'Pull request reviewer',
    summary: 'Reads a pull request, runs the test suite and leaves review comments.',
    environment_class: 'development',
    demo_supported: true,
    default_execution_mode: 'balanced',
    default_permission_preset: 'safe_writes',
    suggested_instructions: 'Review the pull request you are given. Run the tests, then comment on defects with file and line.',
  },
  {
    template_id: 'tpl_dependency_updates',
    name: 'Dependency updater',
    summary: 'Opens pull requests that bump outdated dependencies after the tests pass.',
    environment_class: 'development',
    demo_supported: false,
    default_execution_mode: 'safe',
    default_permission_preset: 'safe_writes',
    suggested_instructions: 'Find outdated dependencies, update one at a time, run the tests and open a pull request per update.',
  },
  {
    template_id: 'tpl_web_research',
    name: 'Web researcher',
    summary: 'Searches the web and writes a sourced summary.',
    environment_class: 'research',
    demo_supported: true,
    default_execution_mode: 'balanced',
    default_permission_preset: 'read_only',
    suggested_instructions: 'Research the question you are given and answer with a summary that cites every source.',
  },
  {
    template_id: 'tpl_form_filler',
    name: 'Browser form assistant',
    summary: 'Fills web forms from structured input and stops before submitting.',
    environment_class: 'browser',
    demo_supported: true,
    default_execution_mode: 'safe',
    default_permission_preset: 'safe_writes',
    suggested_instructions: 'Open the form, fill it from the input and hand control back before any submission.',
  },
  {
    template_id: 'tpl_mobile_qa',
    name: 'Mobile app tester',
    summary: 'Walks through a mobile app and reports crashes and broken screens.',
    environment_class: 'mobile',
    demo_supported: false,
    default_execution_mode: 'safe',
    default_permission_preset: 'read_only',
    suggested_instructions: 'Install the build, walk every screen in the test plan and report what fails.',
  },
  {
    template_id: 'tpl_desktop_reports',
    name: 'Desktop report runner',
    summary: 'Exports reports from a desktop application on a schedule.',
    environment_class: 'desktop',
    demo_supported: false,
    default_execution_mode: 'safe',
    default_permission_preset: 'read_only',
    suggested_instructions: 'Open the application, export the named reports and attach them as artifacts.',
  },
];

export const EXECUTION_MODE_NAMES = ['safe', 'balanced', 'autonomous'] as const;
export type ExecutionModeName = (typeof EXECUTION_MODE_NAMES)[number];
export const DEFAULT_EXECUTION_MODE: ExecutionModeName = 'balanced';

export const PRESET_NAMES = ['read_only', 'safe_writes', 'custom'] as const;
export type PresetName = (typeof PRESET_NAMES)[number];
export const DEFAULT_PRESET: PresetName = 'safe_writes';

export const ACTION_CLASSES = [
  'read',
  'verified_reversible_write',
  'verified_irreversible_write',
  'production_write',
  'computer_use_action',
  'spend_above_threshold',
  'child_run_spawn',
] as const;
type ActionClass = (typeof ACTION_CLASSES)[number];
type Approval = 'not_required' | 'required' | 'required_in_production' | 'forbidden_unattended';

interface ModeDefinition {
  mode: ExecutionModeName;
  display_name: string;
  summary: string;
  approvals: Record<ActionClass, Approval>;
  approval_timeout_seconds: number;
}

const NOTES: Record<Approval, string> = {
  not_required: 'runs without a human decision',
  required: 'held until an approver decides',
  required_in_production: 'held for an approver in a prod workspace, runs elsewhere',
  forbidden_unattended: 'refused unless a human holds the control lease',
};

const MODES: readonly ModeDefinition[] = [
  {
    mode: 'safe',
    display_name: 'Safe',
    summary: 'Every write waits for a human; only reads run unattended.',
    approvals: {
      read: 'not_required',
      verified_reversible_write: 'required',
      verified_irreversible_write: 'required',
      production_write: 'required',
      computer_use_action: 'required',
      spend_above_threshold: 'required',
      child_run_spawn: 'forbidden_unattended',
    },
    approval_timeout_seconds: 900,
  },
  {
    mode: 'balanced',
    display_name: 'Balanced',
    summary: 'Reversible, verified writes run; irreversible and production writes wait for a human.',
    approvals: {
      read: 'not_required',
      verified_reversible_write: 'not_required',
      verified_irreversible_write: 'required',
      production_write: 'required_in_production',
      computer_use_action: 'required',
      spend_above_threshold: 'required',
      child_run_spawn: 'required',
    },
    approval_timeout_seconds: 900,
  },
  {
    mode: 'autonomous',
    display_name: 'Autonomous',
    summary: 'Verified writes run; production effects and spend above the threshold still wait for a human.',
    approvals: {
      read: 'not_required',
      verified_reversible_write: 'not_required',
      verified_irreversible_write: 'required_in_production',
      production_write: 'required_in_production',
      computer_use_action: 'required_in_production',
      spend_above_threshold: 'required',
      child_run_spawn: 'not_required',
    },
    approval_timeout_seconds: 900,
  },
];

export function toExecutionModeDocument(mode: ModeDefinition) {
  return {
    schema_version: 1,
    mode: mode.mode,
    is_default: mode.mode === DEFAULT_EXECUTION_MODE,
    display_name: mode.display_name,
    summary: mode.summary,
    approval_requirements: ACTION_CLASSES.map((action_class) => ({
      action_class,
      approval: mode.approvals[action_class],
      note: NOTES[mode.approvals[action_class]],
    })),
    high_impact_ui_action_policy: 'requires_human_control',
    limits_enforced: 'always',
    approval_timeout_seconds: mode.approval_timeout_seconds,
  };
}

export const EXECUTION_MODES = MODES.map(toExecutionModeDocument);
export const executionMode = (name: ExecutionModeName) => EXECUTION_MODES.find((m) => m.mode === name)!;

/** A limit: `{kind: limited, value}` or `{kind: unlimited}` (no value). */
export type Limit = { kind: 'limited'; value: number } | { kind: 'unlimited' };
const limited = (value: number): Limit => ({ kind: 'limited', value });
const UNLIMITED: Limit = { kind: 'unlimited' };

export const PLAN_NAMES = ['free', 'builder', 'pro', 'team', 'enterprise'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface Plan {
  plan: PlanName;
  included_runs: Limit;
  permitted_environment_classes: EnvironmentClass[];
  concurrency: Limit;
  retention_days: Limit;
  schedules_allowed: boolean;
  webhooks_allowed: boolean;
  trial_demo_runs: Limit;
  amounts_are_configuration: true;
}

export const PLANS: readonly Plan[] = [
  {
    plan: 'free',
    included_runs: limited(50),
    permitted_environment_classes: ['development', 'research', 'code'],
    concurrency: limited(1),
    retention_days: limited(7),
    schedules_allowed: false,
    webhooks_allowed: false,
    trial_demo_runs: limited(3),
    amounts_are_configuration: true,
  },
  {
    plan: 'builder',
    included_runs: limited(500),
    permitted_environment_classes: ['development', 'browser', 'research', 'code'],
    concurrency: limited(2),
    retention_days: limited(14),
    schedules_allowed: true,
    webhooks_allowed: false,
    trial_demo_runs: limited(10),
    amounts_are_configuration: true,
  },
  {
    plan: 'pro',
    included_runs: limited(2000),
    permitted_environment_classes: ['development', 'browser', 'research', 'desktop', 'code'],
    concurrency: limited(5),
    retention_days: limited(30),
    schedules_allowed: true,
    webhooks_allowed: true,
    trial_demo_runs: limited(10),
    amounts_are_configuration: true,
  },
  {
    plan: 'team',
    included_runs: limited(10000),
    permitted_environment_classes: [...ENVIRONMENT_CLASSES],
    concurrency: limited(20),
    retention_days: limited(90),
    schedules_allowed: true,
    webhooks_allowed: true,
    trial_demo_runs: limited(25),
    amounts_are_configuration: true,
  },
  {
    plan: 'enterprise',
    included_runs: UNLIMITED,
    permitted_environment_classes: [...ENVIRONMENT_CLASSES],
    concurrency: UNLIMITED,
    retention_days: limited(365),
    schedules_allowed: true,
    webhooks_allowed: true,
    trial_demo_runs: UNLIMITED,
    amounts_are_configuration: true,
  },
];

export const planOf = (name: string): Plan => PLANS.find((p) => p.plan === name) ?? PLANS[0];

/** True when `count` more would stay inside `limit`. */
export const within = (limit: Limit, count: number): boolean => limit.kind === 'unlimited' || count < limit.value;

/** The limits a new Worker draft starts with (connections spec section 4, Worker create). */
export const DEFAULT_LIMITS = {
  run_timeout_seconds: 600,
  approval_window_seconds: 900,
  infrastructure_retries: 2,
  ambiguous_effect_retries: 0,
  artifact_retention_days: 7,
  concurrency: 1,
  network_policy: 'allowlist',
  session_mode: 'ephemeral',
  production_writes_require_approval: true,
} as const;

export const DEFAULT_ENVIRONMENT_CLASSES: EnvironmentClass[] = ['code'];
