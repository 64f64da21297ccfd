import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError, bodyError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { formatTimeRequired } from 'src/common/time/time';
import { Transactions } from 'src/database/transactions';
import { Tx } from 'src/database/transaction';
import { WorkersRepository } from 'src/modules/workers/definitions/workers.repository';
import { WorkersService } from 'src/modules/workers/definitions/workers.service';
import { classesOf } from 'src/modules/workers/definitions/worker.document';
import { EntitlementsService } from 'src/modules/workers/reference/entitlements.service';
import { admission, RunPlan, unrunnable } from 'src/modules/workers/runs/admission';
import { EstimateDto, ListRunsQuery, StartDemoRunDto, StartRunDto } from 'src/modules/workers/runs/dto/runs.dto';
import { demoNotSupported, handOffRefusal, notPublished, Refusal, Refused, refusal } from 'src/modules/workers/runs/refusals';
import { runInput } from 'src/modules/workers/runs/run-input';
import { toRunDocument } from 'src/modules/workers/runs/run.document';
import { RunsRepository } from 'src/modules/workers/runs/runs.repository';
import { SessionProfilesRepository } from 'src/modules/workers/runs/session-profiles.repository';
import { OrchestratorClient } from 'src/modules/workers/orchestrator.client';
import { cursorPosition, page } from 'src/modules/workers/paging';
import { capabilitiesFor } from 'src/modules/workers/workers.common';
import { DEFAULT_LIMITS, EnvironmentClass, TEMPLATES } from 'src/modules/workers/workers.data';

/**
 * Runs and demo runs. Starting one checks the pre-allocation rules under the workspace lock
 * (published revision, runnable and permitted classes, allowances, concurrency), records the run
 * as `starting`, then hands the complete run input to the orchestrator after commit. A hand-off
 * that does not succeed leaves the run `failed` with a failure object and answers a typed 503.
 */
@Injectable()
export class RunsService {
  constructor(
    private readonly access: WorkspaceAccess,
    private readonly transactions: Transactions,
    private readonly runs: RunsRepository,
    private readonly revisions: WorkersRepository,
    private readonly profiles: SessionProfilesRepository,
    private readonly entitlements: EntitlementsService,
    private readonly workers: WorkersService,
    private readonly orchestrator: OrchestratorClient,
  ) {}

  start(ws: WorkspaceContext, dto: StartRunDto) {
    return this.launch(
      ws,
      async (tx, fresh) => {
        const worker = await this.workers.worker(fresh.id, dto.worker_id, tx.manager);
        if (!worker.publishedRevisionId) {
          throw refusal(409, notPublished('the run was not started', 'publish a revision of the worker, then start the run'));
        }
        const revision = (await this.revisions.revision(fresh.id, worker.id, worker.publishedRevisionId, tx.manager))!;
        let profile = null;
        if (dto.session_profile_id !== undefined) {
          profile = await this.profiles.findActive(tx.manager, fresh.id, dto.session_profile_id);
          if (!profile) throw bodyError(['session_profile_id'], 'unknown or revoked session profile');
        }
        return { kind: 'run' as const, worker, revision, template: null, classes: classesOf(revision.body) as EnvironmentClass[], profile };
      },
      dto.input ?? {},
    );
  }

  startDemo(ws: WorkspaceContext, dto: StartDemoRunDto) {
    return this.launch(
      ws,
      () => {
        const template = TEMPLATES.find((t) => t.template_id === dto.template_id);
        if (!template) throw bodyError(['template_id'], 'unknown template');
        if (!template.demo_supported) throw refusal(409, demoNotSupported());
        return Promise.resolve({ kind: 'demo' as const, worker: null, revision: null, template, classes: [template.environment_class], profile: null });
      },
      dto.input ?? {},
    );
  }

  /** What starting a run would need now, and the refusal it would meet; starts nothing. */
  async estimate(ws: WorkspaceContext, dto: EstimateDto) {
    if ((dto.worker_id === undefined) === (dto.template_id === undefined)) throw bodyError(['worker_id'], 'provide exactly one of worker_id or template_id');
    let plan: RunPlan;
    let limits: Record<string, unknown> = { ...DEFAULT_LIMITS };
    if (dto.worker_id !== undefined) {
      const worker = await this.workers.worker(ws.id, dto.worker_id);
      const revision = (await this.revisions.revision(ws.id, worker.id, (worker.publishedRevisionId ?? worker.draftRevisionId)!))!;
      limits = revision.limits;
      const classes = classesOf(revision.body) as EnvironmentClass[];
      plan = { kind: 'run', worker, revision: worker.publishedRevisionId ? revision : null, template: null, classes, profile: null };
    } else {
      const template = TEMPLATES.find((t) => t.template_id === dto.template_id);
      if (!template) throw bodyError(['template_id'], 'unknown template');
      plan = { kind: 'demo', worker: null, revision: null, template, classes: [template.environment_class], profile: null };
    }
    let found: Refusal | null = null;
    if (plan.kind === 'run' && !plan.revision) found = notPublished('the run would not start', 'publish a revision first');
    found = found ?? (await this.preAllocation(undefined, ws.id, plan))?.fields ?? null;
    if (!found && !this.orchestrator.configured) found = handOffRefusal('not_configured', 'the run would be recorded and fail');
    const { plan: entitlement } = await this.entitlements.plan(ws.id);
    const usage = await this.entitlements.usage(ws.id);
    const allowance = plan.kind === 'run' ? entitlement.included_runs : entitlement.trial_demo_runs;
    const used = plan.kind === 'run' ? usage.runs_started : usage.demo_runs_started;
    return {
      schema_version: 1,
      workspace_id: ws.id,
      kind: plan.kind,
      worker_id: plan.worker?.id ?? null,
      template_id: plan.template?.template_id ?? null,
      environment_classes: plan.classes,
      timeout_seconds: limits.run_timeout_seconds,
      max_attempts: 1 + Number(limits.infrastructure_retries),
      allowance_remaining: allowance.kind === 'unlimited' ? allowance : { kind: 'limited', value: Math.max(0, allowance.value - used) },
      would_start: found === null,
      refusal: found ? { ...found, set_by: 'control' } : null,
      capabilities: capabilitiesFor(ws),
    };
  }

  async list(ws: WorkspaceContext, q: ListRunsQuery) {
    const scope = `worker-runs:${ws.id}`;
    const rows = await this.runs.page(ws.id, { status: q.status, workerId: q.worker_id }, cursorPosition(scope, q.cursor), q.limit);
    const result = page(scope, rows, q.limit);
    return { runs: result.rows.map(toRunDocument), next_cursor: result.next_cursor, capabilities: capabilitiesFor(ws) };
  }

  async get(ws: WorkspaceContext, runId: string) {
    const run = await this.runs.find(ws.id, runId);
    if (!run) throw new ApiError(404, 'run not found');
    return { run: toRunDocument(run), capabilities: capabilitiesFor(ws) };
  }

  async artifact(ws: WorkspaceContext, runId: string, artifactId: string) {
    if (!(await this.runs.find(ws.id, runId))) throw new ApiError(404, 'run not found');
    const row = await this.runs.artifact(ws.id, runId, artifactId);
    if (!row) throw new ApiError(404, 'artifact not found');
    return {
      artifact: {
        schema_version: 1,
        artifact_id: row.id,
        run_id: row.runId,
        workspace_id: ws.id,
        name: row.name,
        media_type: row.mediaType,
        size_bytes: Number(row.sizeBytes),
        digest: row.digest,
        created_at: formatTimeRequired(row.createdAt),
        expires_at: formatTimeRequired(row.expiresAt),
      },
      capabilities: capabilitiesFor(ws),
    };
  }

  /** Checks under the workspace lock, records the run, commits, then hands it off. */
  private async launch(ctx: WorkspaceContext, resolve: (tx: Tx, ws: WorkspaceContext) => Promise<RunPlan>, input: Record<string, unknown>) {
    const { run, handOffInput } = await this.access.mutate(ctx, async (tx, ws) => {
      const plan = await resolve(tx, ws);
      const blocked = await this.preAllocation(tx, ws.id, plan);
      if (blocked) throw refusal(blocked.status, blocked.fields);
      const row = await this.runs.insert(tx.manager, {
        id: newId('run'),
        workspaceId: ws.id,
        kind: plan.kind,
        workerId: plan.worker?.id ?? null,
        revisionId: plan.revision?.id ?? null,
        templateId: plan.template?.template_id ?? null,
        status: 'starting',
        environmentClasses: plan.classes,
        sessionProfileId: plan.profile?.id ?? null,
        input,
        createdByUserId: ws.operator.userId,
      });
      return { run: row, handOffInput: runInput(ws, row, plan, input) };
    });
    const handOff = await this.orchestrator.post('/v1/runs', handOffInput);
    if (!handOff.ok) {
      const fields = { ...handOffRefusal(handOff.failure, 'the run was recorded as failed and did not start'), run_id: run.id };
      const failure = { ...fields, set_by: 'control', occurred_at: formatTimeRequired(new Date()) };
      await this.transactions.run((tx) => this.runs.fail(tx.manager, run.workspaceId, run.id, failure));
      throw refusal(503, fields);
    }
    const orchestratorRunId = typeof handOff.body.run_id === 'string' ? handOff.body.run_id : run.id;
    const queued = await this.transactions.run((tx) => this.runs.queue(tx.manager, run.workspaceId, run.id, orchestratorRunId));
    return { run: toRunDocument(queued), capabilities: capabilitiesFor(ctx) };
  }

  /** The first pre-allocation rule the run breaks, or null (`tx`: the start's transaction; none for an estimate). */
  private async preAllocation(tx: Tx | undefined, workspaceId: string, plan: RunPlan): Promise<Refused | null> {
    const refused = unrunnable(plan);
    if (refused) return refused;
    const { plan: entitlement } = await this.entitlements.plan(workspaceId, tx?.manager);
    const usage = await this.entitlements.usage(workspaceId, tx?.manager);
    const workerActive = plan.revision && plan.worker ? await this.runs.activeForWorker(workspaceId, plan.worker.id, tx?.manager) : null;
    return admission(plan, { entitlement, usage, workerActive });
  }
}
