import { Usage } from 'src/modules/workers/reference/entitlements.service';
import { Refused, RULES } from 'src/modules/workers/runs/refusals';
import { EnvironmentClass, Plan, RUNNABLE_CLASSES, Template, within } from 'src/modules/workers/workers.data';
import { WorkerRevision } from 'src/modules/workers/entities/worker-revision.entity';
import { WorkerSessionProfile } from 'src/modules/workers/entities/worker-session-profile.entity';
import { Worker } from 'src/modules/workers/entities/worker.entity';

/** What a start would run: a published Worker revision, or a template's demo. */
export interface RunPlan {
  kind: 'run' | 'demo';
  worker: Worker | null;
  revision: WorkerRevision | null;
  template: Template | null;
  classes: EnvironmentClass[];
  profile: WorkerSessionProfile | null;
}

/** What the pre-allocation rules weigh a start against, read under the workspace lock. */
export interface Standing {
  entitlement: Plan;
  usage: Usage;
  /** The Worker's active runs (a run plan with a revision). */
  workerActive: number | null;
}

const notStarted = (plan: RunPlan) => (plan.kind === 'demo' ? 'the demo run was not started' : 'the run was not started');

/** Classes this deployment has no runtime for: checked before anything is read. */
export function unrunnable(plan: RunPlan): Refused | null {
  const missing = plan.classes.filter((c) => !RUNNABLE_CLASSES.has(c));
  if (missing.length === 0) return null;
  return {
    status: 409,
    fields: {
      code: 'environment_unavailable',
      reason: 'environment',
      what: 'the run was not started',
      why: `this deployment cannot run ${missing.join(', ')}`,
      suggested_fix: 'use environment classes the worker-environments document lists as runnable',
      rule_reference: RULES,
    },
  };
}

/** The first pre-allocation rule the start breaks against the plan and the counters, or null. */
export function admission(plan: RunPlan, standing: Standing): Refused | null {
  const { entitlement, usage } = standing;
  const outside = plan.kind === 'run' ? plan.classes.filter((c) => !entitlement.permitted_environment_classes.includes(c)) : [];
  const entitlementRefusal = (code: string, why: string, suggested_fix: string, upgrade: boolean): Refused => ({
    status: 402,
    fields: {
      code,
      reason: 'entitlement',
      what: notStarted(plan),
      why,
      suggested_fix,
      ...(upgrade ? { fix_action: 'upgrade_plan' } : {}),
      rule_reference: RULES,
    },
  });
  const concurrencyRefusal = (code: string, why: string, suggested_fix: string): Refused => ({
    status: 409,
    fields: { code, reason: 'concurrency', what: 'the run was not started', why, suggested_fix, rule_reference: RULES },
  });
  if (outside.length > 0) {
    return entitlementRefusal(
      'environment_not_in_plan',
      `the ${entitlement.plan} plan does not include ${outside.join(', ')}`,
      'move to a plan that includes these environment classes, or change the worker',
      true,
    );
  }
  if (plan.kind === 'run' && !within(entitlement.included_runs, usage.runs_started)) {
    return entitlementRefusal(
      'run_allowance_exhausted',
      `the ${entitlement.plan} plan's included runs for this period are used up`,
      'wait for the next period or move to a larger plan',
      true,
    );
  }
  if (plan.kind === 'demo' && !within(entitlement.trial_demo_runs, usage.demo_runs_started)) {
    return entitlementRefusal('trial_exhausted', 'the demo runs of the trial allowance are used up', 'create a worker from the template and run it', false);
  }
  if (!within(entitlement.concurrency, usage.active_runs)) {
    return concurrencyRefusal(
      'concurrency_limit_reached',
      `the workspace already has ${usage.active_runs} active run(s), the plan's limit`,
      'wait for a run to finish or cancel one',
    );
  }
  if (plan.revision && standing.workerActive !== null && standing.workerActive >= Number(plan.revision.limits.concurrency)) {
    return concurrencyRefusal(
      'worker_concurrency_limit_reached',
      'this worker already runs as many times as its concurrency limit allows',
      'wait for its run to finish or cancel it',
    );
  }
  return null;
}
