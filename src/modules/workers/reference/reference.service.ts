import { Inject, Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { formatTimeRequired } from 'src/common/time/time';
import { pingRedis, REDIS, Redis, redisDeadline } from 'src/database/redis.module';
import { KeysService } from 'src/modules/keys/keys.service';
import { classAvailability, EntitlementsService } from 'src/modules/workers/reference/entitlements.service';
import { WorkerPlansRepository } from 'src/modules/workers/reference/worker-plans.repository';
import { RunsRepository } from 'src/modules/workers/runs/runs.repository';
import { OrchestratorClient } from 'src/modules/workers/orchestrator.client';
import { PresetsService } from 'src/modules/workers/reference/presets.service';
import { capabilitiesFor } from 'src/modules/workers/workers.common';
import { ENVIRONMENT_CLASSES, EXECUTION_MODES, RUNNABLE_CLASSES, Template, TEMPLATES } from 'src/modules/workers/workers.data';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

export function toTemplateEntry(template: Template) {
  const gated = RUNNABLE_CLASSES.has(template.environment_class) ? [] : [template.environment_class];
  return {
    template: { schema_version: 1, ...template },
    availability: {
      status: gated.length === 0 ? 'available' : 'gated',
      reason: gated.length === 0 ? null : 'this deployment has no runtime for the environment class this template needs',
      gated_by_environment_classes: gated,
    },
  };
}

/** The read-only Workers documents: templates, environments, entitlements, presets, modes, doctor. */
@Injectable()
export class ReferenceService {
  constructor(
    private readonly plans: WorkerPlansRepository,
    private readonly runs: RunsRepository,
    private readonly workspaces: WorkspacesService,
    private readonly keys: KeysService,
    private readonly entitlements: EntitlementsService,
    private readonly presets: PresetsService,
    private readonly orchestrator: OrchestratorClient,
    @Inject(REDIS) private readonly redis: Redis | null,
  ) {}

  templates(category?: string) {
    return { schema_version: 1, templates: TEMPLATES.filter((t) => category === undefined || t.environment_class === category).map(toTemplateEntry) };
  }

  async environments(ws: WorkspaceContext) {
    const { plan } = await this.entitlements.plan(ws.id);
    const active = await this.runs.activeByClass(ws.id);
    return {
      schema_version: 1,
      workspace_id: ws.id,
      plan: plan.plan,
      environments: ENVIRONMENT_CLASSES.map((c) => ({ ...classAvailability(plan, c), active_runs: active.get(c) ?? 0 })),
      capabilities: capabilitiesFor(ws),
    };
  }

  entitlementsDocument(ws: WorkspaceContext) {
    return this.entitlements.document(ws);
  }

  async permissionPresets(ws: WorkspaceContext) {
    const presets = await this.presets.compileAll(ws.id);
    return {
      schema_version: 1,
      workspace_id: ws.id,
      presets: presets.map(({ policy_revision_id: _, ...preset }) => ({ schema_version: 1, workspace_id: ws.id, ...preset })),
      capabilities: capabilitiesFor(ws),
    };
  }

  executionModes(ws: WorkspaceContext) {
    return { schema_version: 1, workspace_id: ws.id, modes: EXECUTION_MODES, capabilities: capabilitiesFor(ws) };
  }

  /** Each dependency of the Workers surface and its state, probed now. */
  async doctor(ws: WorkspaceContext) {
    const [database, redis, orchestrator, settings] = await Promise.all([
      this.plans.reachable().then((up) => (up ? 'ok' : 'unreachable')),
      this.redis ? redisDeadline(pingRedis(this.redis)).then(() => 'ok', () => 'unreachable') : Promise.resolve('not_configured'),
      this.orchestrator.probe(),
      Promise.all([this.workspaces.assistantEnabled(ws.id), this.keys.activeCount(ws.id)]),
    ]);
    const [assistantEnabled, passports] = settings;
    const check = (name: string, state: string, detail: string) => ({ name, state, detail });
    const dependencies = [
      check('database', database, database === 'ok' ? 'PostgreSQL answers' : 'PostgreSQL does not answer'),
      check(
        'hot_path',
        redis,
        redis === 'not_configured' ? 'REDIS_URL is unset; the in-process cache is used' : redis === 'ok' ? 'Redis answers' : 'Redis does not answer',
      ),
      check(
        'orchestrator',
        orchestrator,
        {
          ok: 'the orchestration service answers',
          not_configured: 'ORCHESTRATOR_URL is unset; runs are refused',
          unreachable: 'the orchestration service does not answer; runs are refused',
          degraded: 'the orchestration service answers with an error',
        }[orchestrator],
      ),
      check(
        'assistant',
        assistantEnabled ? 'ok' : 'disabled',
        assistantEnabled ? 'worker drafting is enabled' : 'worker drafting is off; an operator enables it with the CLI',
      ),
      check('agent_passports', passports > 0 ? 'ok' : 'missing', `${passports} active virtual key(s) can serve as agent passports`),
    ];
    return {
      schema_version: 1,
      workspace_id: ws.id,
      checked_at: formatTimeRequired(new Date()),
      ok: dependencies.every((d) => d.state === 'ok'),
      dependencies,
      capabilities: capabilitiesFor(ws),
    };
  }
}
