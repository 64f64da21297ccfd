import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess, WORKSPACE_NOT_FOUND } from 'src/platform/access/workspace-access.service';
import { ApiError, queryError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { formatTimeRequired } from 'src/common/time/time';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { Transactions } from 'src/database/transactions';
import { OutboxService } from 'src/modules/notifications/outbox.service';
import { AuditService } from 'src/modules/audit/audit.service';
import { ApprovalEvents } from 'src/modules/approvals/approval-events.service';
import { ApprovalPoliciesRepository } from 'src/modules/approvals/approval-policies.repository';
import { DecisionReason, effectiveDecision, ExecutionStatus, StoredStatus, voteBlock, voteError } from 'src/modules/approvals/approval-state';
import { ApprovalsRepository } from 'src/modules/approvals/approvals.repository';
import { ApprovalRow, toApprovalDocument } from 'src/modules/approvals/dto/approval.document';
import { ExecutionReportBody, HeldCallBody, ListApprovalsQuery, VoteBody } from 'src/modules/approvals/dto/approval.dto';
import { initialDecision, matchingRules } from 'src/modules/approvals/rules';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

const NOT_FOUND = 'approval not found';
const CURSOR = { at: 'timestamp', id: 'string' } as const;
const CURSOR_MAX = 1024;

/** The approval inbox and votes (operators), and the held calls and execution reports (the gateway). */
@Injectable()
export class ApprovalsService {
  constructor(
    private readonly approvals: ApprovalsRepository,
    private readonly policies: ApprovalPoliciesRepository,
    private readonly events: ApprovalEvents,
    private readonly transactions: Transactions,
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly workspaces: WorkspacesService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly outbox: OutboxService,
  ) {}

  async list(ws: WorkspaceContext, q: ListApprovalsQuery) {
    let after: { at: string; id: string } | null = null;
    if (q.cursor !== undefined) {
      after = decodeCursor(CURSOR, `approvals:${ws.id}`, q.cursor, CURSOR_MAX);
      if (!after) throw queryError('cursor', 'invalid cursor');
    }
    const now = new Date();
    const { policy_set_hash: hash } = await this.policies.activeRuleSet(ws.id);
    const rows = await this.approvals.page(ws.id, { status: q.decision_status, now, hash }, after && { at: new Date(after.at), id: after.id }, q.limit + 1);
    const page = rows.slice(0, q.limit);
    const votes = await this.approvals.votes(ws.id, page.map((r) => r.id));
    const reviewer = { userId: ws.operator.userId, role: ws.role, frozen: ws.frozen };
    const last = page[page.length - 1];
    return {
      approvals: page.map((r) => toApprovalDocument(r, votes.get(r.id) ?? [], hash, now, reviewer)),
      next_cursor: rows.length > q.limit ? encodeCursor(CURSOR, `approvals:${ws.id}`, { at: formatTimeRequired(last.created_at), id: last.id }) : null,
    };
  }

  async get(ws: WorkspaceContext, approvalId: string) {
    const now = new Date();
    const row = await this.find(ws.id, approvalId);
    const { policy_set_hash: hash } = await this.policies.activeRuleSet(ws.id);
    const votes = await this.approvals.votes(ws.id, [row.id]);
    return toApprovalDocument(row, votes.get(row.id) ?? [], hash, now, { userId: ws.operator.userId, role: ws.role, frozen: ws.frozen });
  }

  /**
   * A vote under the workspace lock (role and freeze re-checked) and the approval row lock: every
   * check and the recomputed decision see the votes committed before, so two reviewers racing for
   * the last slot cannot both land.
   */
  async vote(ctx: WorkspaceContext, approvalId: string, body: VoteBody) {
    return this.access.mutate(ctx, async (tx, ws) => {
      const now = new Date();
      const row = await this.find(ws.id, approvalId, tx.manager, true);
      const { policy_set_hash: hash } = await this.policies.activeRuleSet(ws.id, tx.manager);
      const votes = (await this.approvals.votes(ws.id, [row.id], tx.manager)).get(row.id) ?? [];
      const reviewer = { userId: ws.operator.userId, role: ws.role, frozen: ws.frozen };
      const block = voteBlock(row, hash, now, reviewer, votes.map((v) => v.user_id));
      if (block) throw voteError(block);
      if (row.revision !== body.expected_revision) throw new ApiError(409, 'approval revision changed');

      const vote = { approvalId: row.id, workspaceId: ws.id, userId: reviewer.userId, decision: body.decision, reason: body.reason };
      await this.approvals.insertVote(tx.manager, vote);
      const approvals = votes.filter((v) => v.decision === 'approve').length + (body.decision === 'approve' ? 1 : 0);
      const next: { status: StoredStatus; reason: DecisionReason; execution: ExecutionStatus } =
        body.decision === 'deny'
          ? { status: 'denied', reason: 'reviewer_deny', execution: 'not_requested' }
          : approvals >= row.quorum_required
            ? { status: 'approved', reason: 'quorum_met', execution: 'pending' }
            : { status: 'pending', reason: 'awaiting_quorum', execution: 'not_requested' };
      await this.approvals.decide(tx.manager, ws.id, row.id, { ...next, decidedAt: next.status === 'pending' ? null : now });
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: body.decision === 'approve' ? 'approval.approve' : 'approval.deny',
        target: row.id,
        detail: { key_id: row.key_id, connection_id: row.connection_id, env: row.env, status: next.status, reason: body.reason },
      });
      await this.outbox.emit(tx, ws.id, 'approval.vote_cast', { approval_id: row.id, user_id: reviewer.userId, vote: body.decision, approvals, quorum: row.quorum_required });
      if (next.status !== 'pending') await this.events.emitResolved(tx, ws.id, { id: row.id, expiresAt: row.expires_at }, next.status, now);
      const updated = await this.find(ws.id, row.id, tx.manager);
      const after = (await this.approvals.votes(ws.id, [row.id], tx.manager)).get(row.id) ?? [];
      return toApprovalDocument(updated, after, hash, now, reviewer);
    });
  }

  /**
   * A held tool call from the gateway becomes an approval (idempotent on `request_id`). Returns the
   * document and whether it was created pending (201) rather than found or denied at once (200).
   * The rule set is read under the workspace lock that approval-policy changes take, so the
   * approval is matched against, and stamped with, the rule set current when it is stored.
   */
  async hold(workspaceId: string, body: HeldCallBody): Promise<{ created: boolean; approval: Record<string, unknown> }> {
    if (!(await this.workspaces.existing([workspaceId])).has(workspaceId)) throw new ApiError(404, WORKSPACE_NOT_FOUND);
    const existing = await this.approvals.findByRequest(workspaceId, body.request_id);
    if (existing) return { created: false, approval: await this.gatewayView(existing) };

    return this.transactions.run(async (tx) => {
      await this.workspaces.lock(tx, workspaceId);
      const now = new Date();
      const set = await this.policies.activeRuleSet(workspaceId, tx.manager);
      const matched = matchingRules(set.rules, body.tool, body.env);
      const decision = initialDecision(matched);
      const id = newId('apr');
      const expiresAt = new Date(now.getTime() + this.config.approvalTtlSeconds * 1000);
      const allows = matched.filter((r) => r.effect === 'allow');
      // A pending call announces itself in the statement that stores it; its key's agent is read there.
      const announced =
        decision.status === 'pending'
          ? this.outbox.riding(
              tx,
              workspaceId,
              'approval.requested',
              {
                approval_id: id,
                tool: body.tool,
                agent_id: null,
                key_id: body.key_id,
                environment: body.env,
                expires_at: formatTimeRequired(expiresAt),
                quorum: decision.quorumRequired,
                approver_roles: [...new Set(allows.flatMap((r) => r.approver_roles))].sort(),
                approver_user_ids: [...new Set(allows.flatMap((r) => r.approver_user_ids))].sort(),
                url: this.events.approvalUrl(workspaceId, id),
              },
              'agent_id',
            )
          : undefined;
      const stored = await this.approvals.insertHeld(
        tx.manager,
        {
          id,
          workspaceId,
          requestId: body.request_id,
          keyId: body.key_id,
          invocationId: body.invocation_id ?? null,
          tool: body.tool,
          invocationTool: body.invocation_tool,
          connectionId: body.connection_id,
          env: body.env,
          safeSummary: body.safe_summary,
          reason: body.reason,
          status: decision.status,
          decisionReason: decision.reason,
          policySetHash: set.policy_set_hash,
          matchedRules: matched,
          quorumRequired: decision.quorumRequired,
          createdAt: now,
          expiresAt,
          decidedAt: decision.status === 'denied' ? now : null,
        },
        announced,
      );
      const row = (await this.approvals.findByRequest(workspaceId, body.request_id, tx.manager))!;
      const created = stored && decision.status === 'pending';
      return { created, approval: await this.gatewayView(row, tx.manager) };
    });
  }

  /**
   * The gateway's execution report. Only an approved, unexpired, non-invalidated approval awaiting
   * execution accepts one; the same report again answers the approval unchanged. It takes the
   * workspace lock first, as votes and approval-policy changes do: a policy change has either
   * committed before the rule set is read here, or waits until this report has committed.
   */
  async reportExecution(workspaceId: string, approvalId: string, body: ExecutionReportBody) {
    return this.transactions.run(async (tx) => {
      await this.workspaces.lock(tx, workspaceId);
      const now = new Date();
      const row = await this.find(workspaceId, approvalId, tx.manager, true);
      const report = { receipt_id: body.receipt_id ?? null, error_code: body.error_code ?? null, digest: body.digest ?? null };
      if (row.execution_status === 'succeeded' || row.execution_status === 'failed') {
        const same = row.execution_status === body.status && row.receipt_id === report.receipt_id && row.error_code === report.error_code && row.digest === report.digest;
        if (!same) throw new ApiError(409, 'approval execution already reported');
        return this.gatewayView(row, tx.manager);
      }
      const { policy_set_hash: hash } = await this.policies.activeRuleSet(workspaceId, tx.manager);
      const effective = effectiveDecision(row, hash, now).status;
      if (effective === 'expired') throw new ApiError(409, 'approval has expired');
      if (effective === 'invalidated') throw new ApiError(409, 'approval policy changed');
      if (effective !== 'approved') throw new ApiError(409, 'approval is not approved');
      await this.approvals.recordExecution(tx.manager, workspaceId, row.id, {
        executionStatus: body.status,
        decisionReason: body.status === 'failed' ? 'execution_failed' : row.decision_reason,
        executedAt: now,
        receiptId: report.receipt_id,
        errorCode: report.error_code,
        digest: report.digest,
      });
      return this.gatewayView(await this.find(workspaceId, row.id, tx.manager), tx.manager);
    });
  }

  private async gatewayView(row: ApprovalRow, manager?: EntityManager) {
    const { policy_set_hash: hash } = await this.policies.activeRuleSet(row.workspace_id, manager);
    const votes = await this.approvals.votes(row.workspace_id, [row.id], manager);
    return toApprovalDocument(row, votes.get(row.id) ?? [], hash, new Date());
  }

  private async find(workspaceId: string, approvalId: string, manager?: EntityManager, lock = false): Promise<ApprovalRow> {
    const row = await this.approvals.find(workspaceId, approvalId, manager, lock);
    if (!row) throw new ApiError(404, NOT_FOUND);
    return row;
  }
}
