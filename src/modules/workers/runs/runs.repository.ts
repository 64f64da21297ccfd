import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, In, Raw } from 'typeorm';
import { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { WorkerRunArtifact } from 'src/modules/workers/entities/worker-run-artifact.entity';
import { WorkerRun } from 'src/modules/workers/entities/worker-run.entity';

/** The states in which a run holds an environment and counts against concurrency. */
export const ACTIVE_RUN_STATES = ['starting', 'queued', 'running', 'paused'];

/** The run counters of a workspace: started this calendar month (UTC), and active now. */
export interface RunCounts {
  runs: number;
  demos: number;
  active: number;
  environments: number;
  period_start: Date;
}

/** A run as a start records it; the hand-off, the controls and the database fill the rest. */
export type NewRun = Omit<
  WorkerRun,
  'failure' | 'orchestratorRunId' | 'controlLeaseId' | 'controlLeaseHolder' | 'controlLeaseExpiresAt' | 'createdAt' | 'updatedAt' | 'endedAt'
>;

/** Every statement on `worker_runs` and `worker_run_artifacts`. */
@Injectable()
export class RunsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Records a run; answers the stored row (its timestamps are the database's). */
  async insert(manager: EntityManager, row: NewRun): Promise<WorkerRun> {
    await manager.insert(WorkerRun, row as QueryDeepPartialEntity<WorkerRun>);
    return manager.findOneByOrFail(WorkerRun, { workspaceId: row.workspaceId, id: row.id });
  }

  /** A run of the workspace; `lock` takes it FOR UPDATE. */
  find(workspaceId: string, id: string, manager: EntityManager = this.dataSource.manager, lock = false): Promise<WorkerRun | null> {
    return manager.findOne(WorkerRun, { where: { workspaceId, id }, ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}) });
  }

  /** One page (`limit + 1` rows), newest first, before `after`. */
  page(workspaceId: string, filter: { status?: string; workerId?: string }, after: { at: Date; id: string } | null, limit: number): Promise<WorkerRun[]> {
    const query = this.dataSource.manager.createQueryBuilder(WorkerRun, 'r').where('r.workspaceId = :workspaceId', { workspaceId });
    if (filter.status !== undefined) query.andWhere('r.status = :status', { status: filter.status });
    if (filter.workerId !== undefined) query.andWhere('r.workerId = :workerId', { workerId: filter.workerId });
    // hand-written: keyset page over (created_at, id) descending, a row-value comparison find options cannot express
    if (after) query.andWhere('(r.createdAt, r.id) < (:at, :id)', after);
    return query.orderBy('r.createdAt', 'DESC').addOrderBy('r.id', 'DESC').limit(limit + 1).getMany();
  }

  /** Moves a run from one of `from` to `to` (`ended` stamps `ended_at`); null when it was in none of them. */
  async move(manager: EntityManager, workspaceId: string, id: string, from: string[], to: WorkerRun['status'], ended: boolean): Promise<WorkerRun | null> {
    const values: QueryDeepPartialEntity<WorkerRun> = {
      status: to,
      updatedAt: () => 'clock_timestamp()',
      ...(ended ? { endedAt: () => 'clock_timestamp()' } : {}),
    };
    const { affected } = await manager.update(WorkerRun, { workspaceId, id, status: In(from) }, values);
    return affected ? manager.findOneByOrFail(WorkerRun, { workspaceId, id }) : null;
  }

  /** A hand-off the orchestrator did not take: the run ends `failed` with its failure object. */
  async fail(manager: EntityManager, workspaceId: string, id: string, failure: Record<string, unknown>): Promise<void> {
    const values = { status: 'failed' as const, failure, endedAt: () => 'clock_timestamp()', updatedAt: () => 'clock_timestamp()' };
    await manager.update(WorkerRun, { workspaceId, id }, values as QueryDeepPartialEntity<WorkerRun>);
  }

  /** The orchestrator accepted the run: `queued` under its id. */
  async queue(manager: EntityManager, workspaceId: string, id: string, orchestratorRunId: string): Promise<WorkerRun> {
    await manager.update(WorkerRun, { workspaceId, id }, { status: 'queued', orchestratorRunId, updatedAt: () => 'clock_timestamp()' });
    return manager.findOneByOrFail(WorkerRun, { workspaceId, id });
  }

  /**
   * Gives the control lease to `holder` unless another operator holds an unexpired one, and only
   * while the run is running or paused; null when the lease was not taken.
   */
  async takeLease(
    manager: EntityManager,
    workspaceId: string,
    id: string,
    lease: { leaseId: string; holder: string; expiresAt: Date },
  ): Promise<WorkerRun | null> {
    // hand-written: compare-and-set of the lease in one UPDATE, its expiry compared on the database clock
    const { affected } = await manager
      .createQueryBuilder()
      .update(WorkerRun)
      .set({ controlLeaseId: lease.leaseId, controlLeaseHolder: lease.holder, controlLeaseExpiresAt: lease.expiresAt, updatedAt: () => 'clock_timestamp()' })
      .where(`workspace_id = :workspaceId AND id = :id AND status IN ('running', 'paused')`, { workspaceId, id })
      .andWhere('(control_lease_expires_at IS NULL OR control_lease_expires_at <= now() OR control_lease_holder = :holder)', { holder: lease.holder })
      .execute();
    return affected ? manager.findOneByOrFail(WorkerRun, { workspaceId, id }) : null;
  }

  /** The active runs of one Worker. */
  activeForWorker(workspaceId: string, workerId: string, manager: EntityManager = this.dataSource.manager): Promise<number> {
    return manager.count(WorkerRun, { where: { workspaceId, workerId, status: In(ACTIVE_RUN_STATES) } });
  }

  /** Runs and demo runs the orchestrator accepted this calendar month (UTC), and the active runs and their environments. */
  async counts(workspaceId: string, manager: EntityManager = this.dataSource.manager): Promise<RunCounts> {
    // hand-written: one pass of FILTERed aggregates over the month, which the entity API cannot express
    const [row]: RunCounts[] = await manager.query(
      `WITH period AS (SELECT date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS start)
       SELECT count(*) FILTER (WHERE r.kind = 'run' AND r.orchestrator_run_id IS NOT NULL AND r.created_at >= p.start)::int AS runs,
              count(*) FILTER (WHERE r.kind = 'demo' AND r.orchestrator_run_id IS NOT NULL AND r.created_at >= p.start)::int AS demos,
              count(*) FILTER (WHERE r.status = ANY($2))::int AS active,
              coalesce(sum(cardinality(r.environment_classes)) FILTER (WHERE r.status = ANY($2)), 0)::int AS environments,
              p.start AS period_start
       FROM period p LEFT JOIN worker_runs r ON r.workspace_id = $1
       GROUP BY p.start`,
      [workspaceId, ACTIVE_RUN_STATES],
    );
    return row;
  }

  /** Active runs per environment class (a run on two classes counts for each). */
  async activeByClass(workspaceId: string): Promise<Map<string, number>> {
    // hand-written: unnest of the environment_classes array, grouped
    const rows: { environment_class: string; count: number }[] = await this.dataSource.query(
      `SELECT c AS environment_class, count(*)::int AS count FROM worker_runs r, unnest(r.environment_classes) c
       WHERE r.workspace_id = $1 AND r.status = ANY($2) GROUP BY c`,
      [workspaceId, ACTIVE_RUN_STATES],
    );
    return new Map(rows.map((r) => [r.environment_class, r.count]));
  }

  /** An unexpired artifact of the run (expiry on the database clock), or null. */
  artifact(workspaceId: string, runId: string, id: string): Promise<WorkerRunArtifact | null> {
    return this.dataSource.manager.findOneBy(WorkerRunArtifact, { workspaceId, runId, id, expiresAt: Raw((column) => `${column} > now()`) });
  }
}
