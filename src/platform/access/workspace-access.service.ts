import { Injectable } from '@nestjs/common';
import { FROZEN_ALLOWED, isRole, roleGrants, WorkspaceAction } from 'src/platform/access/actions';
import { OperatorContext, WorkspaceContext } from 'src/platform/access/context';
import { ApiError } from 'src/common/http/errors';
import { isStorableText } from 'src/common/http/text';
import { Tx } from 'src/database/transaction';
import { Transactions } from 'src/database/transactions';
import { AccessRow, WorkspaceAccessRepository } from 'src/platform/tenancy/workspace-access.repository';

export const WORKSPACE_NOT_FOUND = 'workspace not found';

/**
 * Membership first (404, the same for a missing workspace and a non-member), then role (403),
 * then frozen (409): the membership, role and frozen-workspace guards apply them in that order on
 * every request, from one query; mutations apply all three again under the workspace row lock so
 * a role or freeze change that raced the request is honoured.
 */
@Injectable()
export class WorkspaceAccess {
  constructor(
    private readonly repository: WorkspaceAccessRepository,
    private readonly transactions: Transactions,
  ) {}

  /** All three checks, in order: the authorized workspace context. */
  async authorize(workspaceId: string, operator: OperatorContext, action: WorkspaceAction): Promise<WorkspaceContext> {
    return this.checked(await this.membership(workspaceId, operator, action));
  }

  /** The workspace with the operator's role, loaded in one query; 404 when the operator is not a member. */
  async membership(workspaceId: string, operator: OperatorContext, action: WorkspaceAction): Promise<WorkspaceContext> {
    // An id PostgreSQL cannot take names no workspace (src/platform/http/input-text.guard.ts).
    if (!isStorableText(workspaceId)) throw new ApiError(404, WORKSPACE_NOT_FOUND);
    return this.member(await this.repository.read(workspaceId, operator.userId), operator, action);
  }

  /** 403 when the role does not grant the action. */
  checkRole(ws: WorkspaceContext): void {
    if (!roleGrants(ws.role, ws.action)) throw new ApiError(403, 'action not permitted');
  }

  /** 409 when the workspace is frozen and the action is not a read. */
  checkNotFrozen(ws: WorkspaceContext): void {
    if (ws.frozen && !FROZEN_ALLOWED.has(ws.action)) throw new ApiError(409, 'workspace is frozen');
  }

  /** Locks the workspace row for the rest of `tx` and re-authorizes; returns the fresh context. */
  async lock(tx: Tx, ctx: WorkspaceContext): Promise<WorkspaceContext> {
    return this.checked(this.member(await this.repository.lockAndRead(tx.manager, ctx.id, ctx.operator.userId), ctx.operator, ctx.action));
  }

  /** A transaction that starts with `lock`: the shape of every workspace mutation. */
  mutate<T>(ctx: WorkspaceContext, work: (tx: Tx, ws: WorkspaceContext) => Promise<T>): Promise<T> {
    return this.transactions.run(async (tx) => work(tx, await this.lock(tx, ctx)));
  }

  private checked(ws: WorkspaceContext): WorkspaceContext {
    this.checkRole(ws);
    this.checkNotFrozen(ws);
    return ws;
  }

  private member(row: AccessRow | undefined, operator: OperatorContext, action: WorkspaceAction): WorkspaceContext {
    if (!row || !isRole(row.role)) throw new ApiError(404, WORKSPACE_NOT_FOUND);
    return {
      id: row.id,
      orgId: row.org_id,
      slug: row.slug,
      env: row.env,
      frozen: row.frozen,
      snapshotVersion: row.snapshot_version,
      publishedVersion: row.published_version,
      createdAt: row.created_at,
      role: row.role,
      action,
      operator,
    };
  }
}
