import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError, bodyError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { formatTime, formatTimeRequired } from 'src/common/time/time';
import { Tx } from 'src/database/transaction';
import { ControlLeaseDto, EstimateDto, ListRunsQuery, StartDemoRunDto, StartRunDto } from 'src/modules/workers/runs/dto/runs.dto';
import { RevisionRow, WorkerRow } from 'src/modules/workers/definitions/worker.document';
import { ACTIVE_RUN_STATES, EntitlementsService } from 'src/modules/workers/reference/entitlements.service';
import { cursorPosition, page } from 'src/modules/workers/paging';
import { HandOff, OrchestratorClient } from 'src/modules/workers/orchestrator.client';
import { WorkerSessionProfile } from 'src/modules/workers/entities/worker-session-profile.entity';
import { toSessionProfileDocument } from 'src/modules/workers/runs/session-profiles.service';
import { capabilitiesFor, Refusal, refusal } from 'src/modules/workers/workers.common';
import { DEFAULT_LIMITS, EnvironmentClass, executionMode, ExecutionModeName, RUNNABLE_CLASSES, Template, TEMPLATES, within } from 'src/modules/workers/workers.data';
import { classesOf, WorkersService } from 'src/modules/workers/definitions/workers.service';

interface RunRow {
  id: string;
  workspace_id: string;
  kind: 'run' | 'demo';
  worker_id: string | null;
  revision_id: string | null;
  template_id: string | null;
  status: string;
  environment_classes: string[];
  session_profile_id: string | null;
  failure: Record<string, unknown> | null;
  orchestrator_run_id: string | null;
  control_lease_id: string | null;
  control_lease_holder: string | null;
  control_lease_expires_at: Date | null;
  created_by_user_id: string;
  created_at: Date;
  updated_at: Date;
  ended_at: Date | null;
}

const COLUMNS = `id, workspace_id, kind, worker_id, revision_id, template_id, status, environment_classes, session_profile_id, failure,
  orchestrator_run_id, control_lease_id, control_lease_holder, control_lease_expires_at, created_by_user_id, created_at, updated_at, ended_at`;

const toRunDocument = (row: RunRow) => ({
  schema_version: 1,
  run_id: row.id,
  workspace_id: row.workspace_id,
  kind: row.kind,
  worker_id: row.worker_id,
  revision_id: row.revision_id,
  template_id: row.template_id,
  status: row.status,
  environment_classes: row.environment_classes,
  session_profile_id: row.session_profile_id,
  failure: row.failure,
  control_lease:
    row.control_lease_id && row.control_lease_expires_at && row.control_lease_expires_at > new Date()
      ? { lease_id: row.control_lease_id, holder_user_id: row.control_lease_holder, expires_at: formatTimeRequired(row.control_lease_expires_at) }
      : null,
  created_by: { kind: 'operator', id: row.created_by_user_id },
  created_at: formatTimeRequired(row.created_at),
  updated_at: formatTimeRequired(row.updated_at),
  ended_at: formatTime(row.ended_at),
});

const RULES = 'docs/workers.md#runs';

/** The refusal for a hand-off that did not reach a willing orchestrator. */
function handOffRefusal(failure: Exclude<HandOff, { ok: true }>['failure'], what: string): Refusal {
  const why = {
    not_configured: 'no orchestration service is configured for this deployment (ORCHESTRATOR_URL is unset)',
    unreachable: 'the orchestration service did not answer',
    refused: 'the orchestration service refused the request',
  }[failure];
  return {
    code: `orchestrator_${failure}`,
    reason: 'orchestration_unavailable',
    what,
    why,
    suggested_fix: failure === 'not_configured' ? 'set ORCHESTRATOR_URL for control and restart it, then try again' : 'check the orchestration service (see the workers doctor), then try again',
    rule_reference: RULES,
  };
}

interface Plan {
  kind: 'run' | 'demo';
  worker: WorkerRow | null;
  revision: RevisionRow | null;
  template: Template | null;
  classes: EnvironmentClass[];
  profile: WorkerSessionProfile | null;
}

/**
 * Runs and demo runs. Starting one checks the pre-allocation rules under the workspace lock
 * (published revision, runnable and permitted classes, allowances, concurrency), records the run
 * as `starting`, then hands the complete run input to the orchestrator after commit. A hand-off
 * that does not succeed leaves the run `failed` with a failure object and answers a typed 503.
 */
@Injectable()
export class RunsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly access: WorkspaceAccess,
    private readonly entitlements: EntitlementsService,
    private readonly workers: WorkersService,
    private readonly orchestrator: OrchestratorClient,
  ) {}

  start(ws: WorkspaceContext, dto: StartRunDto) {
    return this.launch(ws, async (tx, fresh) => {
      const worker = await this.workers.worker(tx.manager, fresh.id, dto.worker_id);
      if (!worker.published_revision_id) {
        throw refusal(409, {
          code: 'worker_not_published', reason: 'not_published', what: 'the run was not started', why: 'the worker has no published revision',
          suggested_fix: 'publish a revision of the worker, then start the run', rule_reference: RULES,
        });
      }
      const revision = await this.workers.revision(tx.manager, fresh.id, worker.id, worker.published_revision_id);
      let profile: WorkerSessionProfile | null = null;
      if (dto.session_profile_id !== undefined) {
        profile = await tx.manager.findOneBy(WorkerSessionProfile, { workspaceId: fresh.id, id: dto.session_profile_id, status: 'active' });
        if (!profile) throw bodyError(['session_profile_id'], 'unknown or revoked session profile');
      }
      return { kind: 'run' as const, worker, revision, template: null, classes: classesOf(revision.body) as EnvironmentClass[], profile };
    }, dto.input ?? {});
  }

  startDemo(ws: WorkspaceContext, dto: StartDemoRunDto) {
    return this.launch(ws, () => {
      const template = TEMPLATES.find((t) => t.template_id === dto.template_id);
      if (!template) throw bodyError(['template_id'], 'unknown template');
      if (!template.demo_supported) {
        throw refusal(409, {
          code: 'demo_not_supported', reason: 'template', what: 'the demo run was not started', why: 'this template has no demo',
          suggested_fix: 'pick a template whose demo_supported is true', rule_reference: RULES,
        });
      }
      return Promise.resolve({ kind: 'demo' as const, worker: null, revision: null, template, classes: [template.environment_class], profile: null });
    }, dto.input ?? {});
  }

  /** What starting a run would need now, and the refusal it would meet; starts nothing. */
  async estimate(ws: WorkspaceContext, dto: EstimateDto) {
    if ((dto.worker_id === undefined) === (dto.template_id === undefined)) throw bodyError(['worker_id'], 'provide exactly one of worker_id or template_id');
    let plan: Plan;
    let limits: Record<string, unknown> = { ...DEFAULT_LIMITS };
    if (dto.worker_id !== undefined) {
      const worker = await this.workers.worker(this.dataSource.manager, ws.id, dto.worker_id);
      const revision = await this.workers.revision(this.dataSource.manager, ws.id, worker.id, (worker.published_revision_id ?? worker.draft_revision_id)!);
      limits = revision.limits;
      plan = { kind: 'run', worker, revision: worker.published_revision_id ? revision : null, template: null, classes: classesOf(revision.body) as EnvironmentClass[], profile: null };
    } else {
      const template = TEMPLATES.find((t) => t.template_id === dto.template_id);
      if (!template) throw bodyError(['template_id'], 'unknown template');
      plan = { kind: 'demo', worker: null, revision: null, template, classes: [template.environment_class], profile: null };
    }
    let found: Refusal | null = null;
    if (plan.kind === 'run' && !plan.revision) {
      found = { code: 'worker_not_published', reason: 'not_published', what: 'the run would not start', why: 'the worker has no published revision', suggested_fix: 'publish a revision first', rule_reference: RULES };
    }
    found = found ?? (await this.preAllocation(this.dataSource.manager, ws.id, plan))?.fields ?? null;
    if (!found && !this.orchestrator.configured) found = handOffRefusal('not_configured', 'the run would be recorded and fail');
    const { plan: entitlement } = await this.entitlements.plan(this.dataSource.manager, ws.id);
    const usage = await this.entitlements.usage(this.dataSource.manager, ws.id);
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
    const after = cursorPosition(`worker-runs:${ws.id}`, q.cursor);
    const rows: RunRow[] = await this.dataSource.query(
      `SELECT ${COLUMNS} FROM worker_runs WHERE workspace_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR worker_id = $3)
         AND ($4::timestamptz IS NULL OR (created_at, id) < ($4, $5)) ORDER BY created_at DESC, id DESC LIMIT $6`,
      [ws.id, q.status ?? null, q.worker_id ?? null, after?.at ?? null, after?.id ?? null, q.limit + 1],
    );
    const result = page(`worker-runs:${ws.id}`, rows, q.limit);
    return { runs: result.rows.map(toRunDocument), next_cursor: result.next_cursor, capabilities: capabilitiesFor(ws) };
  }

  async get(ws: WorkspaceContext, runId: string) {
    return { run: toRunDocument(await this.run(this.dataSource.manager, ws.id, runId)), capabilities: capabilitiesFor(ws) };
  }

  async artifact(ws: WorkspaceContext, runId: string, artifactId: string) {
    await this.run(this.dataSource.manager, ws.id, runId);
    const rows: { id: string; run_id: string; name: string; media_type: string; size_bytes: string; digest: string; created_at: Date; expires_at: Date }[] =
      await this.dataSource.query(
        `SELECT id, run_id, name, media_type, size_bytes, digest, created_at, expires_at FROM worker_run_artifacts
         WHERE workspace_id = $1 AND run_id = $2 AND id = $3 AND expires_at > now()`,
        [ws.id, runId, artifactId],
      );
    const row = rows[0];
    if (!row) throw new ApiError(404, 'artifact not found');
    return {
      artifact: {
        schema_version: 1,
        artifact_id: row.id,
        run_id: row.run_id,
        workspace_id: ws.id,
        name: row.name,
        media_type: row.media_type,
        size_bytes: Number(row.size_bytes),
        digest: row.digest,
        created_at: formatTimeRequired(row.created_at),
        expires_at: formatTimeRequired(row.expires_at),
      },
      capabilities: capabilitiesFor(ws),
    };
  }

  cancel(ws: WorkspaceContext, runId: string) {
    return this.control(ws, runId, 'cancel', ['starting', 'queued', 'running', 'paused'], 'run is not active', 'cancelled');
  }

  pause(ws: WorkspaceContext, runId: string) {
    return this.control(ws, runId, 'pause', ['running'], 'run is not running', 'paused');
  }

  resume(ws: WorkspaceContext, runId: string) {
    return this.control(ws, runId, 'resume', ['paused'], 'run is not paused', 'running');
  }

  /** A human takes control of a running or paused run for a while; one holder at a time. */
  async controlLease(ctx: WorkspaceContext, runId: string, dto: ControlLeaseDto) {
    const seconds = dto.duration_seconds ?? 900;
    const lease = { lease_id: `lse_${randomBytes(12).toString('hex')}`, holder_user_id: ctx.operator.userId };
    const row = await this.access.mutate(ctx, async (tx, ws) => {
      const run = await this.run(tx.manager, ws.id, runId, true);
      if (!['running', 'paused'].includes(run.status)) throw new ApiError(409, 'run is not running or paused');
      const held = run.control_lease_expires_at && run.control_lease_expires_at > new Date() && run.control_lease_holder !== ws.operator.userId;
      if (held) throw new ApiError(409, 'control lease is held by another operator');
      return run;
    });
    const expiresAt = new Date(Date.now() + seconds * 1000);
    await this.forward(row, 'control-lease', { ...lease, expires_at: formatTimeRequired(expiresAt) });
    return this.access.mutate(ctx, async (tx, ws) => {
      const [rows]: [RunRow[], number] = await tx.manager.query(
        `UPDATE worker_runs SET control_lease_id = $3, control_lease_holder = $4, control_lease_expires_at = $5, updated_at = clock_timestamp()
         WHERE workspace_id = $1 AND id = $2 AND status IN ('running', 'paused')
           AND (control_lease_expires_at IS NULL OR control_lease_expires_at <= now() OR control_lease_holder = $4)
         RETURNING ${COLUMNS}`,
        [ws.id, runId, lease.lease_id, lease.holder_user_id, expiresAt],
      );
      if (!rows[0]) throw new ApiError(409, 'control lease is held by another operator');
      return { run: toRunDocument(rows[0]), capabilities: capabilitiesFor(ws) };
    });
  }

  /** Checks under the workspace lock, records the run, commits, then hands it off. */
  private async launch(ctx: WorkspaceContext, resolve: (tx: Tx, ws: WorkspaceContext) => Promise<Plan>, input: Record<string, unknown>) {
    const { run, runInput } = await this.access.mutate(ctx, async (tx, ws) => {
      const plan = await resolve(tx, ws);
      const blocked = await this.preAllocation(tx.manager, ws.id, plan);
      if (blocked) throw refusal(blocked.status, blocked.fields);
      const runId = newId('run');
      const [row]: RunRow[] = await tx.manager.query(
        `INSERT INTO worker_runs (id, workspace_id, kind, worker_id, revision_id, template_id, status, environment_classes, session_profile_id, input, created_by_user_id)
         VALUES ($1, $2, $3, $4, $5, $6, 'starting', $7, $8, $9, $10) RETURNING ${COLUMNS}`,
        [runId, ws.id, plan.kind, plan.worker?.id ?? null, plan.revision?.id ?? null, plan.template?.template_id ?? null, plan.classes, plan.profile?.id ?? null, JSON.stringify(input), ws.operator.userId],
      );
      return { run: row, runInput: this.runInput(ws, row, plan, input) };
    });
    const handOff = await this.orchestrator.post('/v1/runs', runInput);
    if (!handOff.ok) {
      const fields = { ...handOffRefusal(handOff.failure, 'the run was recorded as failed and did not start'), run_id: run.id };
      await this.dataSource.query(
        `UPDATE worker_runs SET status = 'failed', failure = $3, ended_at = clock_timestamp(), updated_at = clock_timestamp() WHERE workspace_id = $1 AND id = $2`,
        [run.workspace_id, run.id, JSON.stringify({ ...fields, set_by: 'control', occurred_at: formatTimeRequired(new Date()) })],
      );
      throw refusal(503, fields);
    }
    const orchestratorRunId = typeof handOff.body.run_id === 'string' ? handOff.body.run_id : run.id;
    // an UPDATE ... RETURNING answers [rows, affected count]
    const [[row]]: [RunRow[], number] = await this.dataSource.query(
      `UPDATE worker_runs SET status = 'queued', orchestrator_run_id = $3, updated_at = clock_timestamp() WHERE workspace_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [run.workspace_id, run.id, orchestratorRunId],
    );
    return { run: toRunDocument(row), capabilities: capabilitiesFor(ctx) };
  }

  /** The first pre-allocation rule the run breaks, or null. */
  private async preAllocation(manager: Tx['manager'], workspaceId: string, plan: Plan): Promise<{ status: number; fields: Refusal } | null> {
    const unrunnable = plan.classes.filter((c) => !RUNNABLE_CLASSES.has(c));
    if (unrunnable.length > 0) {
      return { status: 409, fields: { code: 'environment_unavailable', reason: 'environment', what: 'the run was not started', why: `this deployment cannot run ${unrunnable.join(', ')}`, suggested_fix: 'use environment classes the worker-environments document lists as runnable', rule_reference: RULES } };
    }
    const { plan: entitlement } = await this.entitlements.plan(manager, workspaceId);
    const usage = await this.entitlements.usage(manager, workspaceId);
    const outside = plan.kind === 'run' ? plan.classes.filter((c) => !entitlement.permitted_environment_classes.includes(c)) : [];
    if (outside.length > 0) {
      return { status: 402, fields: { code: 'environment_not_in_plan', reason: 'entitlement', what: 'the run was not started', why: `the ${entitlement.plan} plan does not include ${outside.join(', ')}`, suggested_fix: 'move to a plan that includes these environment classes, or change the worker', fix_action: 'upgrade_plan', rule_reference: RULES } };
    }
    if (plan.kind === 'run' && !within(entitlement.included_runs, usage.runs_started)) {
      return { status: 402, fields: { code: 'run_allowance_exhausted', reason: 'entitlement', what: 'the run was not started', why: `the ${entitlement.plan} plan's included runs for this period are used up`, suggested_fix: 'wait for the next period or move to a larger plan', fix_action: 'upgrade_plan', rule_reference: RULES } };
    }
    if (plan.kind === 'demo' && !within(entitlement.trial_demo_runs, usage.demo_runs_started)) {
      return { status: 402, fields: { code: 'trial_exhausted', reason: 'entitlement', what: 'the demo run was not started', why: 'the demo runs of the trial allowance are used up', suggested_fix: 'create a worker from the template and run it', rule_reference: RULES } };
    }
    if (!within(entitlement.concurrency, usage.active_runs)) {
      return { status: 409, fields: { code: 'concurrency_limit_reached', reason: 'concurrency', what: 'the run was not started', why: `the workspace already has ${usage.active_runs} active run(s), the plan's limit`, suggested_fix: 'wait for a run to finish or cancel one', rule_reference: RULES } };
    }
    if (plan.revision) {
      const [{ count }]: { count: number }[] = await manager.query(`SELECT count(*)::int AS count FROM worker_runs WHERE workspace_id = $1 AND worker_id = $2 AND status = ANY($3)`, [
        workspaceId,
        plan.worker!.id,
        ACTIVE_RUN_STATES,
      ]);
      if (count >= Number(plan.revision.limits.concurrency)) {
        return { status: 409, fields: { code: 'worker_concurrency_limit_reached', reason: 'concurrency', what: 'the run was not started', why: 'this worker already runs as many times as its concurrency limit allows', suggested_fix: 'wait for its run to finish or cancel it', rule_reference: RULES } };
      }
    }
    return null;
  }

  /** Everything the orchestrator needs to run: revision, mode, limits, capabilities, environment, session profile, input. */
  private runInput(ws: WorkspaceContext, run: RunRow, plan: Plan, input: Record<string, unknown>) {
    const revision = plan.revision;
    const template = plan.template;
    const limits = revision?.limits ?? { ...DEFAULT_LIMITS };
    const mode = (revision?.execution_mode ?? template?.default_execution_mode) as ExecutionModeName;
    return {
      schema_version: 1,
      run_id: run.id,
      workspace_id: ws.id,
      env: ws.env,
      kind: run.kind,
      worker: revision
        ? {
            worker_id: plan.worker!.id,
            slug: plan.worker!.slug,
            agent_passport_id: plan.worker!.agent_passport_id,
            revision_id: revision.id,
            revision_number: revision.revision_number,
            revision_digest: revision.revision_digest,
            body: revision.body,
          }
        : null,
      template: template ? { template_id: template.template_id, instructions: template.suggested_instructions } : null,
      execution_mode: executionMode(mode),
      permission_preset: revision ? { preset: revision.permission_preset, policy_revision_id: revision.policy_revision_id } : { preset: template!.default_permission_preset, policy_revision_id: null },
      limits,
      capabilities: { allowed_capabilities: revision?.allowed_capabilities ?? [], ui_actions: revision?.ui_actions ?? [] },
      environment: { classes: plan.classes, network_policy: limits.network_policy, session_mode: limits.session_mode },
      session_profile: plan.profile ? toSessionProfileDocument(plan.profile) : null,
      input,
    };
  }

  /** Checks the state, asks the orchestrator, then records the new state if nobody moved the run meanwhile. */
  private async control(ctx: WorkspaceContext, runId: string, verb: string, from: string[], conflict: string, to: string) {
    const run = await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.run(tx.manager, ws.id, runId, true);
      if (!from.includes(row.status)) throw new ApiError(409, conflict);
      return row;
    });
    await this.forward(run, verb, { run_id: run.id });
    return this.access.mutate(ctx, async (tx, ws) => {
      const ended = to === 'cancelled' ? 'clock_timestamp()' : 'ended_at';
      const [rows]: [RunRow[], number] = await tx.manager.query(
        `UPDATE worker_runs SET status = $3, ended_at = ${ended}, updated_at = clock_timestamp() WHERE workspace_id = $1 AND id = $2 AND status = ANY($4) RETURNING ${COLUMNS}`,
        [ws.id, runId, to, from],
      );
      if (!rows[0]) throw new ApiError(409, conflict);
      return { run: toRunDocument(rows[0]), capabilities: capabilitiesFor(ws) };
    });
  }

  /** Tells the orchestrator about a control on a run it accepted; a typed 503 when it cannot be told. */
  private async forward(run: RunRow, verb: string, body: object): Promise<void> {
    if (!run.orchestrator_run_id) return;
    const answer = await this.orchestrator.post(`/v1/runs/${encodeURIComponent(run.orchestrator_run_id)}/${verb}`, body);
    if (!answer.ok) throw refusal(503, handOffRefusal(answer.failure, `the ${verb} was not applied; the run is unchanged`));
  }

  private async run(manager: Tx['manager'], workspaceId: string, runId: string, forUpdate = false): Promise<RunRow> {
    const rows: RunRow[] = await manager.query(`SELECT ${COLUMNS} FROM worker_runs WHERE workspace_id = $1 AND id = $2${forUpdate ? ' FOR UPDATE' : ''}`, [workspaceId, runId]);
    if (!rows[0]) throw new ApiError(404, 'run not found');
    return rows[0];
  }
}
