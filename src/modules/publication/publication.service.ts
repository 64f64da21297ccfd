import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Env } from 'src/common/access/context';
import { formatTimeRequired } from 'src/common/time/time';
import { Tx } from 'src/database/transaction';
import { HotPath } from 'src/modules/publication/hot-path';
import { SnapshotRegistry } from 'src/modules/publication/snapshot.registry';
import { MetricsService } from 'src/common/metrics/metrics.service';
import { ApiError } from 'src/common/http/errors';
import { settleAll } from 'src/database/settle-all';
import { errorFields } from 'src/common/logging/error-fields';

export interface Publication {
  state: 'published' | 'pending';
  requested_version: number;
  published_version?: number;
}

/** The `publication` object of documents that report one. */
export function toPublication(requested: number, published: number): Publication {
  const out: Publication = { state: published >= requested ? 'published' : 'pending', requested_version: requested };
  if (published > 0) out.published_version = published;
  return out;
}

/**
 * The publication counters a document's `publication` is built from, read with its other state:
 * a 500 `workspace publication state is unavailable` when they are missing or not yet staged.
 */
export function requirePublicationState<T extends { snapshot_version: number }>(row: T | undefined): T {
  if (!row || !(row.snapshot_version >= 1)) throw new ApiError(500, 'workspace publication state is unavailable');
  return row;
}

/** A workspace's publication counters: the staged snapshot version and the one the hot path holds. */
export interface PublicationVersions {
  snapshot_version: number;
  published_version: number;
}

interface WorkspaceVersionRow {
  id: string;
  env: Env;
  snapshot_version: number;
  published_version: number;
}

/**
 * Snapshot staging and publication. A change stages a snapshot by incrementing
 * `snapshot_version` in its own transaction; after commit the snapshot is built from committed
 * state, written to the hot path and announced. A failure leaves the workspace pending; the
 * reconciliation job publishes it later. Nothing here can fail an operator write.
 */
@Injectable()
export class PublicationService {
  private readonly logger = new Logger('publication');

  constructor(
    private readonly dataSource: DataSource,
    private readonly registry: SnapshotRegistry,
    private readonly hotPath: HotPath,
    metrics: MetricsService,
  ) {
    metrics.gauge('control_publications_pending', 'Workspaces whose staged snapshot the hot path does not hold yet', async () => {
      const [row]: { pending: number }[] = await dataSource.query(`SELECT count(*)::int AS pending FROM workspaces WHERE published_version < snapshot_version`);
      return row.pending;
    });
  }

  /**
   * The workspace's publication counters, read in `manager` (a caller's transaction, or the pool):
   * every module reads them here; 500 `workspace publication state is unavailable` when missing.
   */
  async versions(workspaceId: string, manager: EntityManager = this.dataSource.manager): Promise<PublicationVersions> {
    const [row]: PublicationVersions[] = await manager.query(`SELECT snapshot_version, published_version FROM workspaces WHERE id = $1`, [workspaceId]);
    return requirePublicationState(row);
  }

  /** Stages the next snapshot in `tx` and publishes it after commit; returns the staged version. */
  async stage(tx: Tx, workspaceId: string): Promise<number> {
    const [[row]] = await tx.manager.query(`UPDATE workspaces SET snapshot_version = snapshot_version + 1 WHERE id = $1 RETURNING snapshot_version`, [workspaceId]);
    tx.afterCommit(() => this.publish(workspaceId));
    return row.snapshot_version as number;
  }

  /** The snapshot of the committed state, built in one consistent read. Null for a missing workspace. */
  async build(workspaceId: string): Promise<Record<string, unknown> | null> {
    return this.dataSource.transaction('REPEATABLE READ', async (manager) => {
      const rows: WorkspaceVersionRow[] = await manager.query(`SELECT id, env, snapshot_version, published_version FROM workspaces WHERE id = $1`, [workspaceId]);
      const ws = rows[0];
      if (!ws) return null;
      const parts = await this.registry.build(manager, { id: ws.id, env: ws.env, version: ws.snapshot_version });
      return {
        schema_version: 1,
        workspace_id: ws.id,
        env: ws.env,
        version: ws.snapshot_version,
        generated_at: formatTimeRequired(new Date()),
        ...parts,
      };
    });
  }

  /** Publishes the workspace's current snapshot; true when the hot path now holds it. */
  async publish(workspaceId: string): Promise<boolean> {
    try {
      const snapshot = await this.build(workspaceId);
      if (!snapshot) return false;
      const version = snapshot.version as number;
      await this.hotPath.writeSnapshot(workspaceId, version, JSON.stringify(snapshot));
      await this.dataSource.query(`UPDATE workspaces SET published_version = GREATEST(published_version, $2) WHERE id = $1`, [workspaceId, version]);
      return true;
    } catch (error) {
      this.logger.warn({ msg: 'snapshot publication deferred', workspace_id: workspaceId, ...errorFields(error) });
      return false;
    }
  }

  /**
   * One reconciliation pass over every pending workspace, in pages of `pageSize` (so a workspace
   * that keeps failing never starves the ones after it); returns how many settled.
   */
  reconcile(pageSize = 100): Promise<number> {
    return settleAll(this.dataSource, `SELECT id FROM workspaces WHERE published_version < snapshot_version AND id > $1 ORDER BY id LIMIT $2`, (id) => this.publish(id), pageSize);
  }
}
