import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager, Not } from 'typeorm';
import { Role } from 'src/platform/access/actions';
import { Env, OperatorContext, WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { isUniqueViolation } from 'src/database/errors';
import { inTransaction, Tx } from 'src/database/transaction';
import { AuditService } from 'src/modules/audit/audit.service';
import { PublicationService } from 'src/modules/publication/publication.service';
import { MemberRow, toMemberDocument, toWorkspaceDocument, WorkspaceRow } from 'src/modules/workspaces/dto/workspace.document';
import { OrganizationMember } from 'src/modules/workspaces/entities/organization-member.entity';
import { Organization } from 'src/modules/workspaces/entities/organization.entity';
import { WorkspaceMember } from 'src/modules/workspaces/entities/workspace-member.entity';
import { Workspace } from 'src/modules/workspaces/entities/workspace.entity';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';

const ENVS: readonly Env[] = ['dev', 'stage', 'prod'];
const WORKSPACE_COLUMNS = `w.id, w.org_id, w.slug, w.env, w.frozen, w.snapshot_version`;

@Injectable()
export class WorkspacesService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly publications: PublicationService,
    private readonly overviews: OverviewRegistry,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async create(operator: OperatorContext, orgId: string, slug: string, env: unknown) {
    if (env !== undefined && !(typeof env === 'string' && (ENVS as readonly string[]).includes(env))) {
      throw new ApiError(400, 'env must be one of dev, stage, prod');
    }
    return inTransaction(this.dataSource, async (tx) => {
      const member = await tx.manager.findOne(OrganizationMember, { where: { orgId, userId: operator.userId }, lock: { mode: 'pessimistic_read' } });
      if (!member) throw new ApiError(403, 'not a member of that organization');
      const row = await this.insertWorkspace(tx, operator, orgId, slug, (env as Env | undefined) ?? 'dev');
      return toWorkspaceDocument(row);
    });
  }

  async list(operator: OperatorContext, orgId?: string) {
    const rows: WorkspaceRow[] = await this.dataSource.query(
      `SELECT ${WORKSPACE_COLUMNS} FROM workspaces w JOIN workspace_members m ON m.workspace_id = w.id
       WHERE m.user_id = $1 AND ($2::text IS NULL OR w.org_id = $2) ORDER BY w.created_at, w.id`,
      [operator.userId, orgId ?? null],
    );
    return { workspaces: rows.map(toWorkspaceDocument) };
  }

  /** The operator profile; on first sign-in provisions an organization and a `default` workspace. */
  async profile(operator: OperatorContext) {
    let rows = await this.memberships(operator.userId);
    if (rows.length === 0) {
      await inTransaction(this.dataSource, async (tx) => {
        // Serialize concurrent first calls of one user: exactly one organization and workspace.
        await tx.manager.query(`SELECT pg_advisory_xact_lock(hashtext('provision:' || $1))`, [operator.userId]);
        if (await tx.manager.existsBy(WorkspaceMember, { userId: operator.userId })) return;
        const orgId = newId('org');
        await tx.manager.insert(Organization, { id: orgId });
        await tx.manager.insert(OrganizationMember, { orgId, userId: operator.userId });
        await this.insertWorkspace(tx, operator, orgId, 'default', 'dev');
      });
      rows = await this.memberships(operator.userId);
    }
    return {
      user: { id: operator.userId, email: operator.email },
      workspaces: rows.map((r) => ({ id: r.id, org_id: r.org_id, slug: r.slug, env: r.env, frozen: r.frozen, role: r.role })),
      default_workspace_id: rows[0]?.id ?? null,
    };
  }

  async overview(ws: WorkspaceContext) {
    const blocks = await this.overviews.read(this.dataSource, ws.id);
    return { workspace: toWorkspaceDocument(this.rowOf(ws)), ...blocks };
  }

  get(ws: WorkspaceContext) {
    return toWorkspaceDocument(this.rowOf(ws));
  }

  /** Addresses an agent needs; never a key. */
  clientEndpoints(ws: WorkspaceContext) {
    const gateway = this.config.gatewayPublicUrl;
    return {
      workspace_id: ws.id,
      env: ws.env,
      gateway_url: gateway,
      mcp_url: `${gateway}/mcp`,
      llm_base_url: `${gateway}/v1`,
      key_prefix: ws.env === 'prod' ? 'ob_live' : 'ob_test',
    };
  }

  async members(ws: WorkspaceContext) {
    const rows: MemberRow[] = await this.dataSource.query(
      `SELECT m.user_id, u.email, m.role, m.created_at FROM workspace_members m JOIN users u ON u.id = m.user_id
       WHERE m.workspace_id = $1 ORDER BY m.created_at, m.user_id`,
      [ws.id],
    );
    return { members: rows.map(toMemberDocument) };
  }

  async putMember(ctx: WorkspaceContext, userId: string, role: Role) {
    return this.access.mutate(ctx, async (tx, ws) => {
      const users = await tx.manager.query(`SELECT id FROM users WHERE id = $1`, [userId]);
      if (users.length === 0) throw new ApiError(404, 'user not found');
      const key = { workspaceId: ws.id, userId };
      const current = await tx.manager.findOne(WorkspaceMember, { select: { role: true }, where: key, lock: { mode: 'pessimistic_write' } });
      if (current?.role === 'owner' && role !== 'owner') await this.assertAnotherOwner(tx, ws.id, userId);
      // Under the workspace lock no other writer can add the member between the find and the insert.
      if (current) await tx.manager.update(WorkspaceMember, key, { role });
      else await tx.manager.insert(WorkspaceMember, { ...key, role });
      await this.audit.record(tx, { workspaceId: ws.id, actor: ws.operator, action: 'membership.grant', target: userId, detail: { status: role } });
      const [row]: MemberRow[] = await tx.manager.query(
        `SELECT m.user_id, u.email, m.role, m.created_at FROM workspace_members m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND m.user_id = $2`,
        [ws.id, userId],
      );
      return toMemberDocument(row);
    });
  }

  async deleteMember(ctx: WorkspaceContext, userId: string): Promise<void> {
    await this.access.mutate(ctx, async (tx, ws) => {
      const key = { workspaceId: ws.id, userId };
      const current = await tx.manager.findOne(WorkspaceMember, { select: { role: true }, where: key, lock: { mode: 'pessimistic_write' } });
      if (!current) throw new ApiError(404, 'member not found');
      if (current.role === 'owner') await this.assertAnotherOwner(tx, ws.id, userId);
      await tx.manager.delete(WorkspaceMember, key);
      await this.audit.record(tx, { workspaceId: ws.id, actor: ws.operator, action: 'membership.revoke', target: userId, detail: { status: current.role } });
    });
  }

  /** Operations (CLI): freeze or unfreeze; false when the workspace does not exist. */
  async setFlag(workspaceId: string, flag: 'frozen' | 'assistant_enabled', value: boolean): Promise<boolean> {
    const { affected } = await this.dataSource.manager.update(Workspace, { id: workspaceId }, flag === 'frozen' ? { frozen: value } : { assistantEnabled: value });
    return affected === 1;
  }

  /** Operations (CLI): lets a user create workspaces in an organization. */
  async grantOrganization(orgId: string, userId: string): Promise<void> {
    if (!(await this.dataSource.manager.existsBy(Organization, { id: orgId }))) throw new Error('organization not found');
    const user = await this.dataSource.query(`SELECT 1 FROM users WHERE id = $1`, [userId]);
    if (user.length === 0) throw new Error('user not found');
    await this.dataSource.manager.createQueryBuilder().insert().into(OrganizationMember).values({ orgId, userId }).orIgnore().execute();
  }

  // ---------- reads and locks for other modules (this module owns the workspace and membership tables) ----------

  /** The ids among `ids` that name a workspace (read in `manager`, e.g. a caller's transaction). */
  async existing(ids: string[], manager: EntityManager = this.dataSource.manager): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows: { id: string }[] = await manager.query(`SELECT id FROM workspaces WHERE id = ANY($1)`, [ids]);
    return new Set(rows.map((r) => r.id));
  }

  /** A keyset page of workspace ids in id order after `after` (`''` for the first), read in `manager`: for jobs that walk every workspace. */
  async idsAfter(after: string, limit: number, manager: EntityManager = this.dataSource.manager): Promise<string[]> {
    const rows: { id: string }[] = await manager.query(`SELECT id FROM workspaces WHERE id > $1 ORDER BY id LIMIT $2`, [after, limit]);
    return rows.map((r) => r.id);
  }

  /** Locks the workspace row for the rest of `tx` (the lock every workspace mutation takes), for work no operator started. */
  async lock(tx: Tx, workspaceId: string): Promise<void> {
    await tx.manager.query(`SELECT id FROM workspaces WHERE id = $1 FOR UPDATE`, [workspaceId]);
  }

  /** Whether worker drafting is enabled for the workspace (false for a missing one). */
  async assistantEnabled(workspaceId: string): Promise<boolean> {
    const [row]: { assistant_enabled: boolean }[] = await this.dataSource.query(`SELECT assistant_enabled FROM workspaces WHERE id = $1`, [workspaceId]);
    return row?.assistant_enabled ?? false;
  }

  /** A member's role, email and the workspace's frozen flag: what an access decision without a session needs (the OAuth callback). */
  async memberAccess(workspaceId: string, userId: string): Promise<{ email: string | null; role: string; frozen: boolean } | undefined> {
    const [row]: { email: string | null; role: string; frozen: boolean }[] = await this.dataSource.query(
      `SELECT u.email, m.role, w.frozen FROM users u JOIN workspace_members m ON m.user_id = u.id JOIN workspaces w ON w.id = m.workspace_id
       WHERE u.id = $1 AND m.workspace_id = $2`,
      [userId, workspaceId],
    );
    return row;
  }

  /** The ids among `userIds` that are current members of the workspace, read in `manager`. */
  async memberIds(manager: EntityManager, workspaceId: string, userIds: string[]): Promise<Set<string>> {
    const rows: { user_id: string }[] = await manager.query(`SELECT user_id FROM workspace_members WHERE workspace_id = $1 AND user_id = ANY($2)`, [workspaceId, userIds]);
    return new Set(rows.map((r) => r.user_id));
  }

  private async assertAnotherOwner(tx: Tx, workspaceId: string, userId: string): Promise<void> {
    if (!(await tx.manager.existsBy(WorkspaceMember, { workspaceId, role: 'owner', userId: Not(userId) }))) throw new ApiError(409, 'workspace must keep an owner');
  }

  /** Workspace, owner membership, audit row and the version-1 publication intent, in `tx`; published after commit. */
  private async insertWorkspace(tx: Tx, operator: OperatorContext, orgId: string, slug: string, env: Env): Promise<WorkspaceRow> {
    const id = newId('ws');
    try {
      await tx.manager.insert(Workspace, { id, orgId, slug, env, snapshotVersion: 1 });
    } catch (error) {
      if (isUniqueViolation(error)) throw new ApiError(409, 'workspace slug already exists in this org');
      throw error;
    }
    await tx.manager.insert(WorkspaceMember, { workspaceId: id, userId: operator.userId, role: 'owner' });
    await this.audit.record(tx, { workspaceId: id, actor: operator, action: 'workspace.create', target: id, detail: { env, snapshot_version: 1 } });
    await this.publications.stageFirst(tx, id);
    return { id, org_id: orgId, slug, env, frozen: false, snapshot_version: 1 };
  }

  private memberships(userId: string): Promise<(WorkspaceRow & { role: Role })[]> {
    return this.dataSource.query(
      `SELECT ${WORKSPACE_COLUMNS}, m.role FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id
       WHERE m.user_id = $1 ORDER BY m.created_at, w.id`,
      [userId],
    );
  }

  private rowOf(ws: WorkspaceContext): WorkspaceRow {
    return { id: ws.id, org_id: ws.orgId, slug: ws.slug, env: ws.env, frozen: ws.frozen, snapshot_version: ws.snapshotVersion };
  }

  // TODO(lead): move to the tenancy repository
  /** The ids among `ids` that name a workspace (the stream consumer parks entries of the others). */
  async existingIds(ids: string[]): Promise<string[]> {
    return [...(await this.existing(ids))];
  }
}
