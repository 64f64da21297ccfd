import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, In, MoreThan } from 'typeorm';
import type { Env } from 'src/platform/access/context';
import { Organization } from 'src/platform/tenancy/entities/organization.entity';
import { Workspace } from 'src/platform/tenancy/entities/workspace.entity';

/** A workspace row as the member lists and the workspace documents read it. */
export interface WorkspaceRow {
  id: string;
  org_id: string;
  slug: string;
  env: Env;
  frozen: boolean;
  snapshot_version: number;
}

/** A workspace's publication counters: the staged snapshot version and the one the hot path holds. */
export interface WorkspaceVersions {
  snapshot_version: number;
  published_version: number;
}

/** What a snapshot is built from: the workspace's id, env and counters. */
export interface WorkspaceHeader extends WorkspaceVersions {
  id: string;
  env: Env;
}

/**
 * Whether the workspace `id` (an SQL expression) exists: a fragment for a statement of another
 * module that must check it in the same statement (the gateway's key lookup, a measured hot path:
 * docs/decisions.md, "Module ownership", statements composed from their owners' fragments).
 */
export const workspaceExists = (id: string): string =>
  // hand-written: a primary-key probe the planner turns into a semi-join of the caller's statement.
  `EXISTS (SELECT 1 FROM workspaces w WHERE w.id = ${id})`;

// hand-written: the row lock of a workspace mutation (the access check's form), no row returned.
const LOCK = `SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE`;
// hand-written: increments and reads back in one statement (UPDATE ... RETURNING) under the caller's transaction.
const STAGE = `UPDATE workspaces SET snapshot_version = snapshot_version + 1 WHERE id = $1 RETURNING snapshot_version`;
// hand-written: the published counter only moves forward (GREATEST), whichever replica publishes last.
const PUBLISHED = `UPDATE workspaces SET published_version = GREATEST(published_version, $2) WHERE id = $1`;
// hand-written: compares two columns (the partial index workspaces_publication_pending_idx), keyset-paged by id.
const PENDING_PAGE = `SELECT id FROM workspaces WHERE published_version < snapshot_version AND id > $1 ORDER BY id LIMIT $2`;
// hand-written: compares two columns (the partial index workspaces_publication_pending_idx).
const PENDING_COUNT = `SELECT count(*)::int AS pending FROM workspaces WHERE published_version < snapshot_version`;

/**
 * `workspaces` and `organizations` (owned by the platform: the access check reads them on every
 * request). Exported by PlatformModule: workspaces creates and flags them, publication moves the
 * snapshot counters, audit and the jobs of other modules ask which workspaces exist.
 */
@Injectable()
export class WorkspacesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Inserts a workspace (version 1 staged); a unique violation on (org_id, slug) is the caller's to answer. */
  async insert(manager: EntityManager, row: { id: string; orgId: string; slug: string; env: Env }): Promise<void> {
    await manager.insert(Workspace, { ...row, snapshotVersion: 1 });
  }

  async insertOrganization(manager: EntityManager, id: string): Promise<void> {
    await manager.insert(Organization, { id });
  }

  organizationExists(orgId: string): Promise<boolean> {
    return this.dataSource.manager.existsBy(Organization, { id: orgId });
  }

  /** Sets the frozen or assistant flag; false when the workspace does not exist. */
  async setFlag(workspaceId: string, flag: 'frozen' | 'assistant_enabled', value: boolean): Promise<boolean> {
    const patch = flag === 'frozen' ? { frozen: value } : { assistantEnabled: value };
    const { affected } = await this.dataSource.manager.update(Workspace, { id: workspaceId }, patch);
    return affected === 1;
  }

  /** The ids among `ids` that name a workspace (read in `manager`, e.g. a caller's transaction). */
  async existing(ids: string[], manager: EntityManager = this.dataSource.manager): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await manager.find(Workspace, { select: { id: true }, where: { id: In(ids) } });
    return new Set(rows.map((r) => r.id));
  }

  exists(workspaceId: string): Promise<boolean> {
    return this.dataSource.manager.existsBy(Workspace, { id: workspaceId });
  }

  /** A keyset page of workspace ids in id order after `after` (`''` for the first), read in `manager`. */
  async idsAfter(after: string, limit: number, manager: EntityManager = this.dataSource.manager): Promise<string[]> {
    const rows = await manager.find(Workspace, { select: { id: true }, where: { id: MoreThan(after) }, order: { id: 'ASC' }, take: limit });
    return rows.map((r) => r.id);
  }

  /** A keyset page of workspaces with their staged version, in id order after `after`. */
  async versionsAfter(after: string, limit: number): Promise<{ id: string; snapshot_version: number }[]> {
    const rows = await this.dataSource.manager.find(Workspace, {
      select: { id: true, snapshotVersion: true },
      where: { id: MoreThan(after) },
      order: { id: 'ASC' },
      take: limit,
    });
    return rows.map((r) => ({ id: r.id, snapshot_version: r.snapshotVersion }));
  }

  /** Locks the workspace row for the rest of `manager`'s transaction. */
  async lock(manager: EntityManager, workspaceId: string): Promise<void> {
    await manager.query(LOCK, [workspaceId]);
  }

  /** Locks the workspace row for the rest of `manager`'s transaction and returns its staged version; undefined when missing. */
  async lockVersion(manager: EntityManager, workspaceId: string): Promise<number | undefined> {
    const row = await manager.findOne(Workspace, {
      select: { id: true, snapshotVersion: true },
      where: { id: workspaceId },
      lock: { mode: 'pessimistic_write' },
    });
    return row?.snapshotVersion;
  }

  /** Whether worker drafting is enabled for the workspace (false for a missing one). */
  async assistantEnabled(workspaceId: string): Promise<boolean> {
    const row = await this.dataSource.manager.findOne(Workspace, { select: { id: true, assistantEnabled: true }, where: { id: workspaceId } });
    return row?.assistantEnabled ?? false;
  }

  /** The publication counters, read in `manager` (a caller's transaction, or the pool); undefined for a missing workspace. */
  async versions(workspaceId: string, manager: EntityManager = this.dataSource.manager): Promise<WorkspaceVersions | undefined> {
    const row = await manager.findOne(Workspace, { select: { id: true, snapshotVersion: true, publishedVersion: true }, where: { id: workspaceId } });
    return row ? { snapshot_version: row.snapshotVersion, published_version: row.publishedVersion } : undefined;
  }

  /** Id, env and counters, read in `manager` (the snapshot's read transaction); undefined for a missing workspace. */
  async header(manager: EntityManager, workspaceId: string): Promise<WorkspaceHeader | undefined> {
    const row = await manager.findOne(Workspace, {
      select: { id: true, env: true, snapshotVersion: true, publishedVersion: true },
      where: { id: workspaceId },
    });
    return row ? { id: row.id, env: row.env, snapshot_version: row.snapshotVersion, published_version: row.publishedVersion } : undefined;
  }

  /** Increments `snapshot_version` in `manager`'s transaction and returns the new value. */
  async stage(manager: EntityManager, workspaceId: string): Promise<number> {
    const [[row]]: [{ snapshot_version: number }[], number] = await manager.query(STAGE, [workspaceId]);
    return row.snapshot_version;
  }

  /** Raises `published_version` to `version` (never lowers it). */
  async markPublished(workspaceId: string, version: number): Promise<void> {
    await this.dataSource.query(PUBLISHED, [workspaceId, version]);
  }

  /** A keyset page of the workspaces whose staged version the hot path does not hold yet. */
  async pendingAfter(after: string, limit: number): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(PENDING_PAGE, [after, limit]);
    return rows.map((r) => r.id);
  }

  async countPending(): Promise<number> {
    const [row]: { pending: number }[] = await this.dataSource.query(PENDING_COUNT);
    return row.pending;
  }
}
