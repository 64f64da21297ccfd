import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Role } from 'src/platform/access/actions';
import { Env, OperatorContext, WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { isUniqueViolation } from 'src/database/errors';
import { Tx } from 'src/database/transaction';
import { Transactions } from 'src/database/transactions';
import { AuditService } from 'src/modules/audit/audit.service';
import { UsersRepository } from 'src/modules/identity/users.repository';
import { PublicationService } from 'src/modules/publication/publication.service';
import { MemberRow, toMemberDocument, toWorkspaceDocument } from 'src/modules/workspaces/dto/workspace.document';
import { WorkspaceRow } from 'src/platform/tenancy/workspaces.repository';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';
import { MembershipRow, MembershipsRepository } from 'src/platform/tenancy/memberships.repository';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';

const ENVS: readonly Env[] = ['dev', 'stage', 'prod'];

@Injectable()
export class WorkspacesService {
  constructor(
    private readonly transactions: Transactions,
    private readonly workspaces: WorkspacesRepository,
    private readonly memberships: MembershipsRepository,
    private readonly users: UsersRepository,
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
    return this.transactions.run(async (tx) => {
      if (!(await this.memberships.organizationMember(tx.manager, orgId, operator.userId))) throw new ApiError(403, 'not a member of that organization');
      const row = await this.insertWorkspace(tx, operator, orgId, slug, (env as Env | undefined) ?? 'dev');
      return toWorkspaceDocument(row);
    });
  }

  async list(operator: OperatorContext, orgId?: string) {
    const rows: WorkspaceRow[] = await this.memberships.workspacesOf(operator.userId, orgId);
    return { workspaces: rows.map(toWorkspaceDocument) };
  }

  /** The operator profile; on first sign-in provisions an organization and a `default` workspace. */
  async profile(operator: OperatorContext) {
    let rows = await this.memberships.membershipsOf(operator.userId);
    if (rows.length === 0) {
      await this.transactions.run(async (tx) => {
        // Serialize concurrent first calls of one user: exactly one organization and workspace.
        await this.memberships.lockProvisioning(tx.manager, operator.userId);
        if (await this.memberships.hasWorkspace(tx.manager, operator.userId)) return;
        const orgId = newId('org');
        await this.workspaces.insertOrganization(tx.manager, orgId);
        await this.memberships.insertOrganizationMember(tx.manager, orgId, operator.userId);
        await this.insertWorkspace(tx, operator, orgId, 'default', 'dev');
      });
      rows = await this.memberships.membershipsOf(operator.userId);
    }
    return {
      user: { id: operator.userId, email: operator.email },
      workspaces: rows.map((r) => ({ id: r.id, org_id: r.org_id, slug: r.slug, env: r.env, frozen: r.frozen, role: r.role })),
      default_workspace_id: rows[0]?.id ?? null,
    };
  }

  async overview(ws: WorkspaceContext) {
    const blocks = await this.overviews.read(ws.id);
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
    const rows = await this.memberships.members(ws.id);
    const emails = await this.users.emails([...new Set(rows.map((r) => r.user_id))]);
    return { members: rows.map((r) => toMemberDocument(withEmail(r, emails))) };
  }

  async putMember(ctx: WorkspaceContext, userId: string, role: Role) {
    return this.access.mutate(ctx, async (tx, ws) => {
      if (!(await this.users.exists(userId, tx.manager))) throw new ApiError(404, 'user not found');
      const current = await this.memberships.lockedRole(tx.manager, ws.id, userId);
      if (current === 'owner' && role !== 'owner') await this.assertAnotherOwner(tx, ws.id, userId);
      // Under the workspace lock no other writer can add the member between the find and the insert.
      if (current) await this.memberships.setRole(tx.manager, ws.id, userId, role);
      else await this.memberships.insertMember(tx.manager, ws.id, userId, role);
      await this.audit.record(tx, { workspaceId: ws.id, actor: ws.operator, action: 'membership.grant', target: userId, detail: { status: role } });
      const row = (await this.memberships.member(tx.manager, ws.id, userId))!;
      return toMemberDocument(withEmail(row, await this.users.emails([userId], tx.manager)));
    });
  }

  async deleteMember(ctx: WorkspaceContext, userId: string): Promise<void> {
    await this.access.mutate(ctx, async (tx, ws) => {
      const current = await this.memberships.lockedRole(tx.manager, ws.id, userId);
      if (!current) throw new ApiError(404, 'member not found');
      if (current === 'owner') await this.assertAnotherOwner(tx, ws.id, userId);
      await this.memberships.deleteMember(tx.manager, ws.id, userId);
      await this.audit.record(tx, { workspaceId: ws.id, actor: ws.operator, action: 'membership.revoke', target: userId, detail: { status: current } });
    });
  }

  /** Operations (CLI): freeze or unfreeze; false when the workspace does not exist. */
  async setFlag(workspaceId: string, flag: 'frozen' | 'assistant_enabled', value: boolean): Promise<boolean> {
    return this.workspaces.setFlag(workspaceId, flag, value);
  }

  /** Operations (CLI): lets a user create workspaces in an organization. */
  async grantOrganization(orgId: string, userId: string): Promise<void> {
    if (!(await this.workspaces.organizationExists(orgId))) throw new Error('organization not found');
    if (!(await this.users.exists(userId))) throw new Error('user not found');
    await this.memberships.grantOrganization(orgId, userId);
  }

  // ---------- reads and locks for other modules (this module owns the workspace and membership tables) ----------

  /** The ids among `ids` that name a workspace (read in `manager`, e.g. a caller's transaction). */
  existing(ids: string[], manager?: EntityManager): Promise<Set<string>> {
    return this.workspaces.existing(ids, manager);
  }

  /** A keyset page of workspace ids in id order after `after` (`''` for the first), read in `manager`: for jobs that walk every workspace. */
  idsAfter(after: string, limit: number, manager?: EntityManager): Promise<string[]> {
    return this.workspaces.idsAfter(after, limit, manager);
  }

  /** Locks the workspace row for the rest of `tx` (the lock every workspace mutation takes), for work no operator started. */
  async lock(tx: Tx, workspaceId: string): Promise<void> {
    await this.workspaces.lock(tx.manager, workspaceId);
  }

  /** Whether worker drafting is enabled for the workspace (false for a missing one). */
  assistantEnabled(workspaceId: string): Promise<boolean> {
    return this.workspaces.assistantEnabled(workspaceId);
  }

  /** A member's role, email and the workspace's frozen flag: what an access decision without a session needs (the OAuth callback). */
  async memberAccess(workspaceId: string, userId: string): Promise<{ email: string | null; role: string; frozen: boolean } | undefined> {
    const member = await this.memberships.roleAndFrozen(workspaceId, userId);
    if (!member) return undefined;
    const emails = await this.users.emails([userId]);
    return emails.has(userId) ? { email: emails.get(userId)!, role: member.role, frozen: member.frozen } : undefined;
  }

  /** The ids among `userIds` that are current members of the workspace, read in `manager`. */
  memberIds(manager: EntityManager, workspaceId: string, userIds: string[]): Promise<Set<string>> {
    return this.memberships.memberIds(manager, workspaceId, userIds);
  }

  private async assertAnotherOwner(tx: Tx, workspaceId: string, userId: string): Promise<void> {
    if (!(await this.memberships.hasAnotherOwner(tx.manager, workspaceId, userId))) throw new ApiError(409, 'workspace must keep an owner');
  }

  /** Workspace, owner membership, audit row and the version-1 publication intent, in `tx`; published after commit. */
  private async insertWorkspace(tx: Tx, operator: OperatorContext, orgId: string, slug: string, env: Env): Promise<WorkspaceRow> {
    const id = newId('ws');
    try {
      await this.workspaces.insert(tx.manager, { id, orgId, slug, env });
    } catch (error) {
      if (isUniqueViolation(error)) throw new ApiError(409, 'workspace slug already exists in this org');
      throw error;
    }
    await this.memberships.insertMember(tx.manager, id, operator.userId, 'owner');
    await this.audit.record(tx, { workspaceId: id, actor: operator, action: 'workspace.create', target: id, detail: { env, snapshot_version: 1 } });
    await this.publications.stageFirst(tx, id);
    return { id, org_id: orgId, slug, env, frozen: false, snapshot_version: 1 };
  }

  private rowOf(ws: WorkspaceContext): WorkspaceRow {
    return { id: ws.id, org_id: ws.orgId, slug: ws.slug, env: ws.env, frozen: ws.frozen, snapshot_version: ws.snapshotVersion };
  }
}

function withEmail(row: MembershipRow, emails: Map<string, string | null>): MemberRow {
  return { user_id: row.user_id, email: emails.get(row.user_id) ?? null, role: row.role, created_at: row.created_at };
}
