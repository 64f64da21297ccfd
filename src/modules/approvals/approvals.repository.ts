import { Injectable } from '@nestjs/common';
import { And, DataSource, EntityManager, In, LessThanOrEqual, MoreThan, Not } from 'typeorm';
import { CarriedCtes, NamedStatement, namedQueryIn } from 'src/database/named-query';
import { DecisionReason, StoredStatus } from 'src/modules/approvals/approval-state';
import { agentOfKey } from 'src/modules/keys/key-fragments.repository';
import { EmittedColumns, emittedWith } from 'src/modules/notifications/notification-messages.repository';
import type { Riding } from 'src/modules/notifications/outbox.service';
import { APPROVAL_COLUMNS, ApprovalRow, VoteRow } from 'src/modules/approvals/dto/approval.document';
import { DecisionStatus } from 'src/modules/approvals/dto/approval.dto';
import { ApprovalVote } from 'src/modules/approvals/entities/approval-vote.entity';
import { Approval } from 'src/modules/approvals/entities/approval.entity';

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

/**
 * A held call at first sight, `a`; ON CONFLICT (workspace_id, request_id) DO NOTHING: a retried hold
 * stores nothing. `extra` follows `a` (its values from `$20`).
 */
const holdStatement = (extra?: CarriedCtes): NamedStatement => ({
  name: extra ? 'approval_hold_announced' : 'approval_hold',
  // hand-written: the hold, and with `extra` the outbox's message in the same statement (bench/notifications.ts figure 2).
  text: `WITH a AS (
    INSERT INTO approvals (id, workspace_id, request_id, key_id, invocation_id, tool, invocation_tool, connection_id, env, safe_summary, reason,
      status, decision_reason, execution_status, policy_set_hash, matched_rules, quorum_required, created_at, expires_at, decided_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'not_requested', $14, $15, $16, $17, $18, $19)
    ON CONFLICT (workspace_id, request_id) DO NOTHING RETURNING id, key_id
  )${extra ? `, ${extra.ctes}` : ''}
  SELECT a.id${extra ? `, ${extra.columns}` : ''} FROM a`,
});
const HOLD = holdStatement();
/** The hold announcing itself: `approval.requested`, whose `agent_id` is the held key's. */
const HOLD_ANNOUNCED = holdStatement(emittedWith('a', 20, `COALESCE(to_json(${agentOfKey('$2', 'a.key_id')})::text, 'null')`));

/** A held call as stored at first sight (the execution fields start empty). */
export type NewApproval = Omit<Approval, 'executionStatus' | 'revision' | 'executedAt' | 'receiptId' | 'errorCode' | 'digest'>;

/** The stored approval in the row shape the documents map. */
function toRow(a: Approval): ApprovalRow {
  return {
    id: a.id,
    workspace_id: a.workspaceId,
    request_id: a.requestId,
    key_id: a.keyId,
    invocation_id: a.invocationId,
    tool: a.tool,
    invocation_tool: a.invocationTool,
    connection_id: a.connectionId,
    env: a.env,
    safe_summary: a.safeSummary,
    reason: a.reason,
    status: a.status as StoredStatus,
    decision_reason: a.decisionReason as DecisionReason,
    execution_status: a.executionStatus,
    revision: a.revision,
    policy_set_hash: a.policySetHash,
    matched_rules: a.matchedRules,
    quorum_required: a.quorumRequired,
    created_at: a.createdAt,
    expires_at: a.expiresAt,
    decided_at: a.decidedAt,
    executed_at: a.executedAt,
    receipt_id: a.receiptId,
    error_code: a.errorCode,
    digest: a.digest,
  };
}

/** Every statement on `approvals` and `approval_votes`. */
@Injectable()
export class ApprovalsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * A page of the inbox, newest first, after the keyset `after` (created_at, id), filtered by the
   * effective status at `now` against the current policy-set hash; `limit` rows at most.
   */
  page(
    workspaceId: string,
    filter: { status?: DecisionStatus; now: Date; hash: string },
    after: { at: Date; id: string } | null,
    limit: number,
  ): Promise<ApprovalRow[]> {
    const values: unknown[] = [workspaceId];
    const param = (value: unknown) => () => `$${values.push(value)}`;
    const where = [`workspace_id = $1`];
    if (filter.status) where.push(`(${STATUS_FILTER[filter.status](param(filter.now), param(filter.hash))})`);
    if (after) where.push(`(created_at, id) < (${param(after.at)()}, ${param(after.id)()})`);
    values.push(limit);
    // hand-written: keyset page over (created_at, id) with the effective-status filter (a row comparison and OR-ed conditions).
    return this.dataSource.query(
      `SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${values.length}`,
      values,
    );
  }

  /** One approval of the workspace (locked for update with `lock`, in `manager`'s transaction). */
  async find(workspaceId: string, id: string, manager: EntityManager = this.dataSource.manager, lock = false): Promise<ApprovalRow | null> {
    const row = await manager.findOne(Approval, { where: { workspaceId, id }, ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}) });
    return row && toRow(row);
  }

  async findByRequest(workspaceId: string, requestId: string, manager: EntityManager = this.dataSource.manager): Promise<ApprovalRow | null> {
    const row = await manager.findOneBy(Approval, { workspaceId, requestId });
    return row && toRow(row);
  }

  /** The votes on each of `approvalIds`, oldest first (then by user). */
  async votes(workspaceId: string, approvalIds: string[], manager: EntityManager = this.dataSource.manager): Promise<Map<string, VoteRow[]>> {
    const out = new Map<string, VoteRow[]>();
    if (approvalIds.length === 0) return out;
    const rows = await manager.find(ApprovalVote, { where: { workspaceId, approvalId: In(approvalIds) }, order: { createdAt: 'ASC', userId: 'ASC' } });
    for (const v of rows) {
      const vote: VoteRow = { approval_id: v.approvalId, user_id: v.userId, decision: v.decision, reason: v.reason, created_at: v.createdAt };
      out.set(v.approvalId, [...(out.get(v.approvalId) ?? []), vote]);
    }
    return out;
  }

  async insertVote(manager: EntityManager, vote: Omit<ApprovalVote, 'createdAt'>): Promise<void> {
    await manager.insert(ApprovalVote, vote);
  }

  /** Stores a vote's outcome (and a new revision). */
  async decide(
    manager: EntityManager,
    workspaceId: string,
    id: string,
    next: { status: ApprovalRow['status']; reason: ApprovalRow['decision_reason']; execution: ApprovalRow['execution_status']; decidedAt: Date | null },
  ): Promise<void> {
    await manager.update(
      Approval,
      { workspaceId, id },
      { status: next.status, decisionReason: next.reason, executionStatus: next.execution, decidedAt: next.decidedAt, revision: () => 'revision + 1' },
    );
  }

  /**
   * Stores a held call at first sight; false when its request id was held before (a retried hold
   * stores nothing and is not an error). `announced`: the values of the outbox's `approval.requested`,
   * written by the same statement with the key's agent (HOLD_ANNOUNCED), only if the call is stored.
   */
  async insertHeld(manager: EntityManager, a: NewApproval, announced?: Riding): Promise<boolean> {
    const values = [
      a.id, a.workspaceId, a.requestId, a.keyId, a.invocationId, a.tool, a.invocationTool, a.connectionId, a.env,
      JSON.stringify(a.safeSummary), a.reason, a.status, a.decisionReason, a.policySetHash, JSON.stringify(a.matchedRules),
      a.quorumRequired, a.createdAt, a.expiresAt, a.decidedAt,
    ];
    const [answer] = await namedQueryIn<EmittedColumns>(manager, announced ? HOLD_ANNOUNCED : HOLD, announced ? [...values, ...announced.values] : values);
    if (answer) announced?.written(answer);
    return answer !== undefined;
  }

  /** Stores the gateway's execution report (and a new revision). */
  async recordExecution(
    manager: EntityManager,
    workspaceId: string,
    id: string,
    report: Pick<Approval, 'executionStatus' | 'decisionReason' | 'executedAt' | 'receiptId' | 'errorCode' | 'digest'>,
  ): Promise<void> {
    await manager.update(Approval, { workspaceId, id }, { ...report, revision: () => 'revision + 1' });
  }

  /** Pending approvals whose `expires_at` is in (`since`, `until`], soonest first. */
  timingOut(until: Date, since: Date): Promise<Pick<Approval, 'id' | 'workspaceId' | 'expiresAt'>[]> {
    return this.dataSource.manager.find(Approval, {
      select: { id: true, workspaceId: true, expiresAt: true },
      where: { status: 'pending', expiresAt: And(LessThanOrEqual(until), MoreThan(since)) },
      order: { expiresAt: 'ASC' },
    });
  }

  /** The workspace's pending approvals unexpired at `now` and raised under another policy set than `hash`, oldest first. */
  pendingUnderOtherSet(manager: EntityManager, workspaceId: string, now: Date, hash: string): Promise<Pick<Approval, 'id' | 'expiresAt'>[]> {
    return manager.find(Approval, {
      select: { id: true, expiresAt: true },
      where: { workspaceId, status: 'pending', expiresAt: MoreThan(now), policySetHash: Not(hash) },
      order: { createdAt: 'ASC', id: 'ASC' },
    });
  }
}
