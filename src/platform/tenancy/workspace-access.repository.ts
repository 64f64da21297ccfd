import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { namedQuery } from 'src/database/named-query';
import { WorkspaceRow } from 'src/platform/tenancy/workspaces.repository';

/** The workspace with the caller's membership role, as the access check reads it. */
export interface AccessRow extends WorkspaceRow {
  published_version: number;
  created_at: Date;
  role: string | null;
}

const COLUMNS = `w.id, w.org_id, w.slug, w.env, w.frozen, w.snapshot_version, w.published_version, w.created_at, m.role`;
// hand-written: the access check of every workspace request (bench key list), a named statement prepared once per connection.
const READ = {
  name: 'access_read',
  text: `SELECT ${COLUMNS} FROM workspaces w JOIN workspace_members m ON m.workspace_id = w.id AND m.user_id = $2 WHERE w.id = $1`,
};
// hand-written: the row lock every workspace mutation takes first (SELECT ... FOR UPDATE, no row returned).
const LOCK = `SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE`;
/** Run after LOCK as its own statement, so it reads what committed while the lock was awaited. */
// hand-written: the access check's join, re-read under the lock inside the mutation's transaction.
const REREAD = `SELECT ${COLUMNS} FROM workspaces w JOIN workspace_members m ON m.workspace_id = w.id AND m.user_id = $2 WHERE w.id = $1`;

/** The access check's statements over `workspaces` and `workspace_members` (src/platform/access/workspace-access.service.ts). */
@Injectable()
export class WorkspaceAccessRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The workspace with `userId`'s role; undefined when either is missing. Outside a transaction (named statement). */
  async read(workspaceId: string, userId: string): Promise<AccessRow | undefined> {
    const [row] = await namedQuery<AccessRow>(this.dataSource, READ, [workspaceId, userId]);
    return row;
  }

  /** Locks the workspace row for the rest of `manager`'s transaction, then reads it again with `userId`'s role. */
  async lockAndRead(manager: EntityManager, workspaceId: string, userId: string): Promise<AccessRow | undefined> {
    await manager.query(LOCK, [workspaceId]);
    const rows: AccessRow[] = await manager.query(REREAD, [workspaceId, userId]);
    return rows[0];
  }
}
