import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { EntityManager } from 'typeorm';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError } from 'src/common/http/errors';
import { formatTimeRequired } from 'src/common/time/time';
import { WorkerRun } from 'src/modules/workers/entities/worker-run.entity';
import { ControlLeaseDto } from 'src/modules/workers/runs/dto/runs.dto';
import { handOffRefusal, refusal } from 'src/modules/workers/runs/refusals';
import { toRunDocument } from 'src/modules/workers/runs/run.document';
import { RunsRepository } from 'src/modules/workers/runs/runs.repository';
import { OrchestratorClient } from 'src/modules/workers/orchestrator.client';
import { capabilitiesFor } from 'src/modules/workers/workers.common';

/**
 * The controls on a run (cancel, pause, resume, the control lease). Each checks the run's state
 * under the workspace lock, tells the orchestrator (a run it accepted), then records the new
 * state in a second mutation if nobody moved the run meanwhile.
 */
@Injectable()
export class RunControlsService {
  constructor(
    private readonly access: WorkspaceAccess,
    private readonly runs: RunsRepository,
    private readonly orchestrator: OrchestratorClient,
  ) {}

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
      const run = await this.locked(tx.manager, ws.id, runId);
      if (!['running', 'paused'].includes(run.status)) throw new ApiError(409, 'run is not running or paused');
      const held = run.controlLeaseExpiresAt && run.controlLeaseExpiresAt > new Date() && run.controlLeaseHolder !== ws.operator.userId;
      if (held) throw new ApiError(409, 'control lease is held by another operator');
      return run;
    });
    const expiresAt = new Date(Date.now() + seconds * 1000);
    await this.forward(row, 'control-lease', { ...lease, expires_at: formatTimeRequired(expiresAt) });
    return this.access.mutate(ctx, async (tx, ws) => {
      const taken = await this.runs.takeLease(tx.manager, ws.id, runId, { leaseId: lease.lease_id, holder: lease.holder_user_id, expiresAt });
      if (!taken) throw new ApiError(409, 'control lease is held by another operator');
      return { run: toRunDocument(taken), capabilities: capabilitiesFor(ws) };
    });
  }

  /** Checks the state, asks the orchestrator, then records the new state if nobody moved the run meanwhile. */
  private async control(ctx: WorkspaceContext, runId: string, verb: string, from: string[], conflict: string, to: WorkerRun['status']) {
    const run = await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.locked(tx.manager, ws.id, runId);
      if (!from.includes(row.status)) throw new ApiError(409, conflict);
      return row;
    });
    await this.forward(run, verb, { run_id: run.id });
    return this.access.mutate(ctx, async (tx, ws) => {
      const moved = await this.runs.move(tx.manager, ws.id, runId, from, to, to === 'cancelled');
      if (!moved) throw new ApiError(409, conflict);
      return { run: toRunDocument(moved), capabilities: capabilitiesFor(ws) };
    });
  }

  /** Tells the orchestrator about a control on a run it accepted; a typed 503 when it cannot be told. */
  private async forward(run: WorkerRun, verb: string, body: object): Promise<void> {
    if (!run.orchestratorRunId) return;
    const answer = await this.orchestrator.post(`/v1/runs/${encodeURIComponent(run.orchestratorRunId)}/${verb}`, body);
    if (!answer.ok) throw refusal(503, handOffRefusal(answer.failure, `the ${verb} was not applied; the run is unchanged`));
  }

  private async locked(manager: EntityManager, workspaceId: string, runId: string): Promise<WorkerRun> {
    const run = await this.runs.find(workspaceId, runId, manager, true);
    if (!run) throw new ApiError(404, 'run not found');
    return run;
  }
}
