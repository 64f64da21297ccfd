import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { deleteAtMost } from 'src/database/delete-at-most';
import { SnapshotInstance } from 'src/modules/publication/entities/snapshot-instance.entity';

/** What an instance last reported applying. */
export interface InstanceRow {
  instance_id: string;
  version: number;
  digest: string;
  applied_at: Date;
  reported_at: Date;
}

// hand-written: ON CONFLICT upsert keeping an instance's highest version (CASE on EXCLUDED), reported_at from the database clock.
const REPORT = `INSERT INTO snapshot_instances AS i (workspace_id, instance_id, version, digest, applied_at, reported_at) VALUES ($1, $2, $3, $4, $5, now())
  ON CONFLICT (workspace_id, instance_id) DO UPDATE SET reported_at = now(),
    version = CASE WHEN EXCLUDED.version >= i.version THEN EXCLUDED.version ELSE i.version END,
    digest = CASE WHEN EXCLUDED.version >= i.version THEN EXCLUDED.digest ELSE i.digest END,
    applied_at = CASE WHEN EXCLUDED.version >= i.version THEN EXCLUDED.applied_at ELSE i.applied_at END
  RETURNING instance_id, version, digest, applied_at, reported_at`;
// hand-written: a transaction-scoped advisory lock (no table) serializing one workspace's reports.
const ROLLOUT_LOCK = `SELECT pg_advisory_xact_lock(hashtext('snapshot-rollout:' || $1))`;
// hand-written: live instances (reported within $1 seconds) on a version older than their workspace's newest published one
// (the newest version with published_at, the history's record of what the hot path took).
const BEHIND = `SELECT count(*)::int AS behind FROM snapshot_instances i
  WHERE i.reported_at >= now() - make_interval(secs => $1)
    AND i.version < (SELECT max(v.version) FROM snapshot_versions v WHERE v.workspace_id = i.workspace_id AND v.published_at IS NOT NULL)`;

/** `snapshot_instances`: what each gateway instance reported applying (the rollout view). */
@Injectable()
export class SnapshotInstancesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Serializes the reports of one workspace for the rest of `manager`'s transaction. */
  async lockWorkspaceReports(manager: EntityManager, workspaceId: string): Promise<void> {
    await manager.query(ROLLOUT_LOCK, [workspaceId]);
  }

  /** Records an instance's report in `manager` (its highest version wins, the later of equal ones); the row now kept. */
  async report(
    manager: EntityManager,
    workspaceId: string,
    report: { instance_id: string; version: number; digest: string; applied_at: Date },
  ): Promise<InstanceRow> {
    const [row]: InstanceRow[] = await manager.query(REPORT, [workspaceId, report.instance_id, report.version, report.digest, report.applied_at]);
    return row;
  }

  /** The workspace's instances in id order. */
  async list(workspaceId: string): Promise<InstanceRow[]> {
    const rows = await this.dataSource.manager.find(SnapshotInstance, { where: { workspaceId }, order: { instanceId: 'ASC' } });
    return rows.map((r) => ({ instance_id: r.instanceId, version: r.version, digest: r.digest, applied_at: r.appliedAt, reported_at: r.reportedAt }));
  }

  /** How many live instances run an older version than their workspace's newest published one. */
  async countBehind(liveSeconds: number): Promise<number> {
    const [row]: { behind: number }[] = await this.dataSource.query(BEHIND, [liveSeconds]);
    return row.behind;
  }

  /** Forgets up to `limit` instances silent for `hours`; how many went. */
  forgetSilent(hours: number, limit: number): Promise<number> {
    return deleteAtMost(this.dataSource, 'snapshot_instances', 'reported_at < now() - make_interval(hours => $1)', [hours], limit);
  }
}
