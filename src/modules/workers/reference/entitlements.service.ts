import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { WorkspaceContext } from 'src/platform/access/context';
import { formatTimeRequired } from 'src/common/time/time';
import { capabilitiesFor } from 'src/modules/workers/workers.common';
import { WorkerPlansRepository } from 'src/modules/workers/reference/worker-plans.repository';
import { RunsRepository } from 'src/modules/workers/runs/runs.repository';
import { ENVIRONMENT_CLASSES, EnvironmentClass, Limit, Plan, planOf, PLANS, RUNNABLE_CLASSES } from 'src/modules/workers/workers.data';

export interface Usage {
  runs_started: number;
  demo_runs_started: number;
  active_runs: number;
  active_environments: number;
  period_start: string;
}

/** Where an environment class stands for a workspace: runnable here, permitted by the plan. */
export function classAvailability(plan: Plan, environmentClass: EnvironmentClass) {
  const runnable = RUNNABLE_CLASSES.has(environmentClass);
  const permitted = plan.permitted_environment_classes.includes(environmentClass);
  const status = !runnable ? 'not_runnable' : !permitted ? 'not_in_plan' : 'available';
  const reason = !runnable
    ? 'this deployment has no runtime for this environment class'
    : !permitted
      ? `the ${plan.plan} plan does not include this environment class`
      : null;
  return { environment_class: environmentClass, status, reason, runnable, permitted_by_plan: permitted };
}

const remaining = (limit: Limit, used: number): Limit => (limit.kind === 'unlimited' ? limit : { kind: 'limited', value: Math.max(0, limit.value - used) });

/**
 * The workspace's plan (a `worker_plans` row, else `free`) and usage counters counted from real
 * run rows in the current calendar month (UTC). A run counts as started once the orchestrator
 * accepted it; demo runs are counted apart.
 */
@Injectable()
export class EntitlementsService {
  constructor(
    private readonly plans: WorkerPlansRepository,
    private readonly runs: RunsRepository,
  ) {}

  /** The plan (`manager`: inside a caller's transaction). */
  async plan(workspaceId: string, manager?: EntityManager): Promise<{ plan: Plan; cardOnFile: boolean }> {
    const row = await this.plans.find(workspaceId, manager);
    return { plan: planOf(row?.plan ?? 'free'), cardOnFile: row?.cardOnFile ?? false };
  }

  async usage(workspaceId: string, manager?: EntityManager): Promise<Usage> {
    const row = await this.runs.counts(workspaceId, manager);
    return {
      runs_started: row.runs,
      demo_runs_started: row.demos,
      active_runs: row.active,
      active_environments: row.environments,
      period_start: formatTimeRequired(row.period_start),
    };
  }

  async document(ws: WorkspaceContext) {
    const { plan, cardOnFile } = await this.plan(ws.id);
    const usage = await this.usage(ws.id);
    return {
      schema_version: 1,
      workspace_id: ws.id,
      plan: plan.plan,
      included_runs: plan.included_runs,
      runs_remaining: remaining(plan.included_runs, usage.runs_started),
      permitted_environment_classes: plan.permitted_environment_classes,
      concurrency: plan.concurrency,
      retention_days: plan.retention_days,
      schedules_allowed: plan.schedules_allowed,
      webhooks_allowed: plan.webhooks_allowed,
      trial_allowance: { demo_runs: plan.trial_demo_runs, demo_runs_remaining: remaining(plan.trial_demo_runs, usage.demo_runs_started) },
      card_on_file: cardOnFile,
      usage,
      class_availability: ENVIRONMENT_CLASSES.map((c) => classAvailability(plan, c)),
      plan_ladder: PLANS,
      capabilities: capabilitiesFor(ws),
    };
  }
}
