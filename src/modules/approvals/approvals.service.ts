import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess, WORKSPACE_NOT_FOUND } from 'src/platform/access/workspace-access.service';
import { ApiError, queryError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { formatTimeRequired } from 'src/common/time/time';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { inTransaction, Tx } from 'src/database/transaction';
import { KeysService } from 'src/modules/keys/keys.service';
import { OutboxService } from 'src/modules/notifications/outbox.service';
import { AuditService } from 'src/modules/audit/audit.service';
import { effectiveDecision, voteBlock, voteError } from 'src/modules/approvals/approval-state';
import { APPROVAL_COLUMNS, ApprovalRow, toApprovalDocument, VoteRow } from 'src/modules/approvals/dto/approval.document';
import { DecisionStatus, ExecutionReportBody, HeldCallBody, ListApprovalsQuery, VoteBody } from 'src/modules/approvals/dto/approval.dto';
import { activeRuleSet, initialDecision, matchingRules } from 'src/modules/approvals/rules';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

const NOT_FOUND = 'approval not found';
const CURSOR = { at: 'timestamp', id: 'string' } as const;
const CURSOR_MAX = 1024;

/** Stored pending, or approved and not executed: the rows expiry and policy changes act on. */
const OPEN = `(status = 'pending' OR (status = 'approved' AND execution_status = 'pending'))`;
type Placeholder = () => string;
/** The effective-status filter in SQL, given placeholders for now and the current policy-set hash. */
const STATUS_FILTER: Record<DecisionStatus, (now: Placeholder, hash: Placeholder) => string> = {
  pending: (now, hash) => `status = 'pending' AND expires_at > ${now()} AND policy_set_hash = ${hash()}`,
  approved: (now, hash) => `status = 'approved' AND NOT (execution_status = 'pending' AND (expires_at <= ${now()} OR policy_set_hash <> ${hash()}))`,
  denied: () => `status = 'denied'`,
  expired: (now) => `${OPEN} AND expires_at <= ${now()}`,
  invalidated: (now, hash) => `${OPEN} AND expires_at > ${now()} AND policy_set_hash <> ${hash()}`,
};

@Injectable()
export class ApprovalsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly workspaces: WorkspacesService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly outbox: OutboxService,
    private readonly keys: KeysService,
  ) {}

  async list(ws: WorkspaceContext, q: ListApprovalsQuery) {
    let after: { at: string; id: string } | null = null;
    if (q.cursor !== undefined) {
      after = decodeCursor(CURSOR, `approvals:${ws.id}`, q.cursor, CURSOR_MAX);
      if (!after) throw queryError('cursor', 'invalid cursor');
    }
    const now = new Date();
    const { policy_set_hash: hash } = await activeRuleSet(this.dataSource, ws.id);
    const values: unknown[] = [ws.id];
    const param = (value: unknown) => () => `$${values.push(value)}`;
    const where = [`workspace_id = $1`];
    if (q.decision_status) where.push(`(${STATUS_FILTER[q.decision_status](param(now), param(hash))})`);
    if (after) where.push(`(created_at, id) < (${param(new Date(after.at))()}, ${param(after.id)()})`);
    values.push(q.limit + 1);
    const rows: ApprovalRow[] = await this.dataSource.query(
      `SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${values.length}`,
      values,
    );
    const page = rows.slice(0, q.limit);
    const votes = await this.votesOf(this.dataSource.manager, ws.id, page.map((r) => r.id));
    const reviewer = { userId: ws.operator.userId, role: ws.role, frozen: ws.frozen };
    const last = page[page.length - 1];
    return {
      approvals: page.map((r) => toApprovalDocument(r, votes.get(r.id) ?? [], hash, now, reviewer)),
      next_cursor: rows.length > q.limit ? encodeCursor(CURSOR, `approvals:${ws.id}`, { at: formatTimeRequired(last.created_at), id: last.id }) : null,
    };
  }

  async get(ws: WorkspaceContext, approvalId: string) {
    const now = new Date();
    const row = await this.find(this.dataSource.manager, ws.id, approvalId);
    const { policy_set_hash: hash } = await activeRuleSet(this.dataSource, ws.id);
    const votes = await this.votesOf(this.dataSource.manager, ws.id, [row.id]);
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
      const row = await this.find(tx.manager, ws.id, approvalId, true);
      const { policy_set_hash: hash } = await activeRuleSet(tx.manager, ws.id);
      const votes = (await this.votesOf(tx.manager, ws.id, [row.id])).get(row.id) ?? [];
      const reviewer = { userId: ws.operator.userId, role: ws.role, frozen: ws.frozen };
      const block = voteBlock(row, hash, now, reviewer, votes.map((v) => v.user_id));
      if (block) throw voteError(block);
      if (row.revision !== body.expected_revision) throw new ApiError(409, 'approval revision changed');

      await tx.manager.query(`INSERT INTO approval_votes (approval_id, workspace_id, user_id, decision, reason) VALUES ($1, $2, $3, $4, $5)`, [
        row.id,
        ws.id,
        reviewer.userId,
        body.decision,
        body.reason,
      ]);
      const approvals = votes.filter((v) => v.decision === 'approve').length + (body.decision === 'approve' ? 1 : 0);
      const next =
        body.decision === 'deny'
          ? { status: 'denied', reason: 'reviewer_deny', execution: 'not_requested' }
          : approvals >= row.quorum_required
            ? { status: 'approved', reason: 'quorum_met', execution: 'pending' }
            : { status: 'pending', reason: 'awaiting_quorum', execution: 'not_requested' };
      await tx.manager.query(
        `UPDATE approvals SET status = $3, decision_reason = $4, execution_status = $5, revision = revision + 1,
           decided_at = CASE WHEN $3 = 'pending' THEN NULL ELSE $6::timestamptz END
         WHERE workspace_id = $1 AND id = $2`,
        [ws.id, row.id, next.status, next.reason, next.execution, now],
      );
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: body.decision === 'approve' ? 'approval.approve' : 'approval.deny',
        target: row.id,
        detail: { key_id: row.key_id, connection_id: row.connection_id, env: row.env, status: next.status, reason: body.reason },
      });
      await this.outbox.emit(tx, ws.id, 'approval.vote_cast', { approval_id: row.id, user_id: reviewer.userId, vote: body.decision, approvals, quorum: row.quorum_required });
      if (next.status !== 'pending') await this.emitResolved(tx, ws.id, row.id, next.status, now);
      const updated = await this.find(tx.manager, ws.id, row.id);
      const after = (await this.votesOf(tx.manager, ws.id, [row.id])).get(row.id) ?? [];
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
    const existing = await this.findByRequest(this.dataSource.manager, workspaceId, body.request_id);
    if (existing) return { created: false, approval: await this.gatewayView(existing) };

    return inTransaction(this.dataSource, async (tx) => {
      await this.workspaces.lock(tx, workspaceId);
      const now = new Date();
      const set = await activeRuleSet(tx.manager, workspaceId);
      const matched = matchingRules(set.rules, body.tool, body.env);
      const decision = initialDecision(matched);
      const expires = new Date(now.getTime() + this.config.approvalTtlSeconds * 1000);
      const inserted: { id: string }[] = await tx.manager.query(
        `INSERT INTO approvals (id, workspace_id, request_id, key_id, invocation_id, tool, invocation_tool, connection_id, env, safe_summary, reason,
           status, decision_reason, execution_status, policy_set_hash, matched_rules, quorum_required, created_at, expires_at, decided_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'not_requested', $14, $15, $16, $17, $18, $19)
         ON CONFLICT (workspace_id, request_id) DO NOTHING RETURNING id`,
        [
          newId('apr'),
          workspaceId,
          body.request_id,
          body.key_id,
          body.invocation_id ?? null,
          body.tool,
          body.invocation_tool,
          body.connection_id,
          body.env,
          JSON.stringify(body.safe_summary),
          body.reason,
          decision.status,
          decision.reason,
          set.policy_set_hash,
          JSON.stringify(matched),
          decision.quorumRequired,
          now,
          expires,
          decision.status === 'denied' ? now : null,
        ],
      );
      const row = (await this.findByRequest(tx.manager, workspaceId, body.request_id))!;
      const created = inserted.length === 1 && decision.status === 'pending';
      if (created) {
        const allows = matched.filter((r) => r.effect === 'allow');
        await this.outbox.emit(tx, workspaceId, 'approval.requested', {
          approval_id: row.id,
          tool: row.tool,
          agent_id: await this.keys.agentOf(tx.manager, workspaceId, row.key_id),
          key_id: row.key_id,
          environment: row.env,
          expires_at: formatTimeRequired(row.expires_at),
          quorum: row.quorum_required,
          approver_roles: [...new Set(allows.flatMap((r) => r.approver_roles))].sort(),
          approver_user_ids: [...new Set(allows.flatMap((r) => r.approver_user_ids))].sort(),
          url: this.approvalUrl(workspaceId, row.id),
        });
      }
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
    return inTransaction(this.dataSource, async (tx) => {
      await this.workspaces.lock(tx, workspaceId);
      const now = new Date();
      const row = await this.find(tx.manager, workspaceId, approvalId, true);
      const report = { receipt_id: body.receipt_id ?? null, error_code: body.error_code ?? null, digest: body.digest ?? null };
      if (row.execution_status === 'succeeded' || row.execution_status === 'failed') {
        const same = row.execution_status === body.status && row.receipt_id === report.receipt_id && row.error_code === report.error_code && row.digest === report.digest;
        if (!same) throw new ApiError(409, 'approval execution already reported');
        return this.gatewayView(row, tx.manager);
      }
      const { policy_set_hash: hash } = await activeRuleSet(tx.manager, workspaceId);
      const effective = effectiveDecision(row, hash, now).status;
      if (effective === 'expired') throw new ApiError(409, 'approval has expired');
      if (effective === 'invalidated') throw new ApiError(409, 'approval policy changed');
      if (effective !== 'approved') throw new ApiError(409, 'approval is not approved');
      await tx.manager.query(
        `UPDATE approvals SET execution_status = $3, decision_reason = $4, executed_at = $5, receipt_id = $6, error_code = $7, digest = $8, revision = revision + 1
         WHERE workspace_id = $1 AND id = $2`,
        [workspaceId, row.id, body.status, body.status === 'failed' ? 'execution_failed' : row.decision_reason, now, report.receipt_id, report.error_code, report.digest],
      );
      return this.gatewayView(await this.find(tx.manager, workspaceId, row.id), tx.manager);
    });
  }

  /**
   * Events from time: `approval.expiring` for pending approvals within NOTIFY_APPROVAL_EXPIRING_S
   * of `expires_at`, and `approval.resolved` (`expired`) for pending ones past it (looked for up to
   * a day back). Each once per approval through the outbox's dedupe key, however many replicas run
   * this pass. Answers how many messages were emitted.
   */
  async notifyTimeouts(now = new Date()): Promise<number> {
    const lead = new Date(now.getTime() + this.config.notify.approvalExpiringSeconds * 1000);
    const rows: { id: string; workspace_id: string; expires_at: Date }[] = await this.dataSource.query(
      `SELECT id, workspace_id, expires_at FROM approvals WHERE status = 'pending' AND expires_at <= $1 AND expires_at > $2 ORDER BY expires_at`,
      [lead, new Date(now.getTime() - 86_400_000)],
    );
    let emitted = 0;
    for (const row of rows) {
      const id = await inTransaction(this.dataSource, (tx) =>
        row.expires_at <= now
          ? this.emitResolved(tx, row.workspace_id, row.id, 'expired', row.expires_at)
          : this.outbox.emit(
              tx,
              row.workspace_id,
              'approval.expiring',
              { approval_id: row.id, expires_at: formatTimeRequired(row.expires_at), url: this.approvalUrl(row.workspace_id, row.id) },
              { dedupeKey: `approval.expiring:${row.id}` },
            ),
      );
      if (id) emitted++;
    }
    return emitted;
  }

  /**
   * `approval.resolved` (`invalidated`) for every unexpired pending approval raised under another
   * policy set than `currentHash`: called in the transaction of the approval-policy change that
   * invalidates them (under its workspace lock, as votes are), so a rolled-back change emits nothing.
   */
  async emitInvalidated(tx: Tx, workspaceId: string, currentHash: string): Promise<void> {
    const now = new Date();
    const rows: { id: string }[] = await tx.manager.query(
      `SELECT id FROM approvals WHERE workspace_id = $1 AND status = 'pending' AND expires_at > $2 AND policy_set_hash <> $3 ORDER BY created_at, id`,
      [workspaceId, now, currentHash],
    );
    for (const row of rows) await this.emitResolved(tx, workspaceId, row.id, 'invalidated', now);
  }

  /** `approval.resolved`, once per approval whichever act or pass sees it leave `pending` first. */
  private emitResolved(tx: Tx, workspaceId: string, approvalId: string, status: string, at: Date): Promise<string | null> {
    return this.outbox.emit(tx, workspaceId, 'approval.resolved', { approval_id: approvalId, decision_status: status, resolved_at: formatTimeRequired(at) }, { dedupeKey: `approval.resolved:${approvalId}` });
  }

  private approvalUrl(workspaceId: string, approvalId: string): string {
    return `${this.config.webUrl}/workspaces/${workspaceId}/approvals/${approvalId}`;
  }

  private async gatewayView(row: ApprovalRow, manager: EntityManager = this.dataSource.manager) {
    const { policy_set_hash: hash } = await activeRuleSet(manager, row.workspace_id);
    const votes = await this.votesOf(manager, row.workspace_id, [row.id]);
    return toApprovalDocument(row, votes.get(row.id) ?? [], hash, new Date());
  }

  private async find(manager: EntityManager, workspaceId: string, approvalId: string, lock = false): Promise<ApprovalRow> {
    const [row]: ApprovalRow[] = await manager.query(
      `SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE workspace_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
      [workspaceId, approvalId],
    );
    if (!row) throw new ApiError(404, NOT_FOUND);
    return row;
  }

  private async findByRequest(manager: EntityManager, workspaceId: string, requestId: string): Promise<ApprovalRow | undefined> {
    const [row]: ApprovalRow[] = await manager.query(`SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE workspace_id = $1 AND request_id = $2`, [workspaceId, requestId]);
    return row;
  }

  private async votesOf(manager: EntityManager, workspaceId: string, approvalIds: string[]): Promise<Map<string, VoteRow[]>> {
    const out = new Map<string, VoteRow[]>();
    if (approvalIds.length === 0) return out;
    const rows: VoteRow[] = await manager.query(
      `SELECT approval_id, user_id, decision, reason, created_at FROM approval_votes WHERE workspace_id = $1 AND approval_id = ANY($2) ORDER BY created_at, user_id`,
      [workspaceId, approvalIds],
    );
    for (const row of rows) out.set(row.approval_id, [...(out.get(row.approval_id) ?? []), row]);
    return out;
  }
}
