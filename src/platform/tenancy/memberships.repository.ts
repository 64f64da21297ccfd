import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, In, Not } from 'typeorm';
import type { Role } from 'src/platform/access/actions';
import { WorkspaceRow } from 'src/platform/tenancy/workspaces.repository';
import { OrganizationMember } from 'src/platform/tenancy/entities/organization-member.entity';
import { WorkspaceMember } from 'src/platform/tenancy/entities/workspace-member.entity';

/** A workspace as its member lists show it, with the member's role. */
export interface MemberWorkspaceRow extends WorkspaceRow {
  role: Role;
}

/** A workspace membership, without the user's e-mail (identity's). */
export interface MembershipRow {
  user_id: string;
  role: Role;
  created_at: Date;
}

const WORKSPACE_COLUMNS = `w.id, w.org_id, w.slug, w.env, w.frozen, w.snapshot_version, m.role`;
// hand-written: a join of workspaces and workspace_members (the entities declare no relation), the optional org filter in SQL.
const OF_USER_IN_ORG = `SELECT ${WORKSPACE_COLUMNS} FROM workspaces w JOIN workspace_members m ON m.workspace_id = w.id
  WHERE m.user_id = $1 AND ($2::text IS NULL OR w.org_id = $2) ORDER BY w.created_at, w.id`;
// hand-written: a join of workspace_members and workspaces (the entities declare no relation), in membership order.
const MEMBERSHIPS_OF = `SELECT ${WORKSPACE_COLUMNS} FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id
  WHERE m.user_id = $1 ORDER BY m.created_at, w.id`;
// hand-written: a join of workspace_members and workspaces (the entities declare no relation).
const ROLE_AND_FROZEN = `SELECT m.role, w.frozen FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id
  WHERE m.user_id = $1 AND m.workspace_id = $2`;
// hand-written: a transaction-scoped advisory lock (no table) serializing one user's first sign-in.
const PROVISION_LOCK = `SELECT pg_advisory_xact_lock(hashtext('provision:' || $1))`;

/**
 * `workspace_members` and `organization_members` (owned by the platform with the workspaces they
 * grant). Exported by PlatformModule: workspaces manages members, other modules ask who is a member.
 */
@Injectable()
export class MembershipsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The user's organization membership, locked FOR SHARE for the rest of `manager`'s transaction. */
  async organizationMember(manager: EntityManager, orgId: string, userId: string): Promise<boolean> {
    const row = await manager.findOne(OrganizationMember, { where: { orgId, userId }, lock: { mode: 'pessimistic_read' } });
    return row !== null;
  }

  async insertOrganizationMember(manager: EntityManager, orgId: string, userId: string): Promise<void> {
    await manager.insert(OrganizationMember, { orgId, userId });
  }

  /** Adds the organization membership unless it exists (ON CONFLICT DO NOTHING). */
  async grantOrganization(orgId: string, userId: string): Promise<void> {
    await this.dataSource.manager.createQueryBuilder().insert().into(OrganizationMember).values({ orgId, userId }).orIgnore().execute();
  }

  /** Serializes concurrent first sign-ins of one user for the rest of `manager`'s transaction. */
  async lockProvisioning(manager: EntityManager, userId: string): Promise<void> {
    await manager.query(PROVISION_LOCK, [userId]);
  }

  hasWorkspace(manager: EntityManager, userId: string): Promise<boolean> {
    return manager.existsBy(WorkspaceMember, { userId });
  }

  /** The user's workspaces with their role, oldest workspace first; only `orgId`'s when given. */
  workspacesOf(userId: string, orgId?: string): Promise<MemberWorkspaceRow[]> {
    return this.dataSource.query(OF_USER_IN_ORG, [userId, orgId ?? null]);
  }

  /** The user's workspaces with their role, in the order they became a member. */
  membershipsOf(userId: string): Promise<MemberWorkspaceRow[]> {
    return this.dataSource.query(MEMBERSHIPS_OF, [userId]);
  }

  /** The members of a workspace, oldest first. */
  async members(workspaceId: string): Promise<MembershipRow[]> {
    const rows = await this.dataSource.manager.find(WorkspaceMember, { where: { workspaceId }, order: { createdAt: 'ASC', userId: 'ASC' } });
    return rows.map(toMembershipRow);
  }

  /** One membership, read in `manager`; undefined when none. */
  async member(manager: EntityManager, workspaceId: string, userId: string): Promise<MembershipRow | undefined> {
    const row = await manager.findOne(WorkspaceMember, { where: { workspaceId, userId } });
    return row ? toMembershipRow(row) : undefined;
  }

  /** The member's role, its row locked FOR UPDATE for the rest of `manager`'s transaction; undefined when not a member. */
  async lockedRole(manager: EntityManager, workspaceId: string, userId: string): Promise<Role | undefined> {
    const row = await manager.findOne(WorkspaceMember, { select: { role: true }, where: { workspaceId, userId }, lock: { mode: 'pessimistic_write' } });
    return row?.role;
  }

  async insertMember(manager: EntityManager, workspaceId: string, userId: string, role: Role): Promise<void> {
    await manager.insert(WorkspaceMember, { workspaceId, userId, role });
  }

  async setRole(manager: EntityManager, workspaceId: string, userId: string, role: Role): Promise<void> {
    await manager.update(WorkspaceMember, { workspaceId, userId }, { role });
  }

  async deleteMember(manager: EntityManager, workspaceId: string, userId: string): Promise<void> {
    await manager.delete(WorkspaceMember, { workspaceId, userId });
  }

  /** Whether the workspace has an owner other than `userId`, read in `manager`. */
  hasAnotherOwner(manager: EntityManager, workspaceId: string, userId: string): Promise<boolean> {
    return manager.existsBy(WorkspaceMember, { workspaceId, role: 'owner', userId: Not(userId) });
  }

  /** The ids among `userIds` that are current members of the workspace, read in `manager`. */
  async memberIds(manager: EntityManager, workspaceId: string, userIds: string[]): Promise<Set<string>> {
    if (userIds.length === 0) return new Set();
    const rows = await manager.find(WorkspaceMember, { select: { userId: true }, where: { workspaceId, userId: In(userIds) } });
    return new Set(rows.map((r) => r.userId));
  }

  /** The member's role and the workspace's frozen flag; undefined when not a member. */
  async roleAndFrozen(workspaceId: string, userId: string): Promise<{ role: Role; frozen: boolean } | undefined> {
    const [row]: { role: Role; frozen: boolean }[] = await this.dataSource.query(ROLE_AND_FROZEN, [userId, workspaceId]);
    return row;
  }

  /** The workspace's oldest owner (created_at, then user id); undefined when it has none. */
  async oldestOwner(workspaceId: string): Promise<string | undefined> {
    const row = await this.dataSource.manager.findOne(WorkspaceMember, {
      select: { userId: true },
      where: { workspaceId, role: 'owner' },
      order: { createdAt: 'ASC', userId: 'ASC' },
    });
    return row?.userId;
  }
}

function toMembershipRow(row: WorkspaceMember): MembershipRow {
  return { user_id: row.userId, role: row.role, created_at: row.createdAt };
}
