import { Injectable, OnModuleInit } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError, bodyError, FieldValidationError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { isUniqueViolation } from 'src/database/errors';
import { Tx } from 'src/database/transaction';
import { AuditAction } from 'src/modules/audit/audit-vocabulary';
import { AuditService } from 'src/modules/audit/audit.service';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotRegistry } from 'src/modules/publication/snapshot.registry';
import { ApprovalEvents } from 'src/modules/approvals/approval-events.service';
import { ApprovalPoliciesRepository } from 'src/modules/approvals/approval-policies.repository';
import { ApprovalPolicyBody } from 'src/modules/approvals/dto/approval-policy.dto';
import { toApprovalPolicyDocument } from 'src/modules/approvals/dto/approval-policy.document';
import { ApprovalPolicy } from 'src/modules/approvals/entities/approval-policy.entity';
import { ApprovalRule, RULE_MESSAGES, validateRules } from 'src/modules/approvals/rules';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

const NOT_FOUND = 'approval policy not found';

/** `expected_revision` of a revise or disable body: required, an integer >= 1. */
function requiredRevision(value: unknown): number {
  if (value === undefined || value === null) throw bodyError(['expected_revision'], 'expected_revision is required', 'missing');
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw bodyError(['expected_revision'], 'expected_revision must be an integer greater than or equal to 1', 'greater_than_equal');
  }
  return value;
}

function checkedRules(input: unknown): ApprovalRule[] {
  const result = validateRules(input);
  if ('errors' in result) throw new FieldValidationError(result.errors);
  return result.rules;
}

@Injectable()
export class ApprovalPoliciesService implements OnModuleInit {
  constructor(
    private readonly policies: ApprovalPoliciesRepository,
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly publications: PublicationService,
    private readonly snapshots: SnapshotRegistry,
    private readonly workspaces: WorkspacesService,
    private readonly events: ApprovalEvents,
  ) {}

  onModuleInit(): void {
    this.snapshots.register('approval_rules', (manager, ws) => this.policies.activeRuleSet(ws.id, manager));
  }

  async list(ws: WorkspaceContext) {
    const rows = await this.policies.list(ws.id);
    return { approval_policies: rows.map(toApprovalPolicyDocument) };
  }

  async get(ws: WorkspaceContext, policyId: string) {
    const row = await this.policies.find(ws.id, policyId);
    if (!row) throw new ApiError(404, NOT_FOUND);
    return toApprovalPolicyDocument(row);
  }

  async create(ctx: WorkspaceContext, body: ApprovalPolicyBody) {
    if (body.expected_revision !== undefined) throw bodyError(['expected_revision'], 'expected_revision is only valid when updating');
    const rules = checkedRules(body.rules);
    return this.access.mutate(ctx, async (tx, ws) => {
      await this.assertMembers(tx, ws.id, rules);
      const id = newId('apy');
      const revisionId = newId('ayr');
      await this.writeUnique(() => this.policies.insert(tx.manager, { id, workspaceId: ws.id, name: body.name, status: 'active', revision: 1, revisionId, rules }));
      await this.recordRevision(tx, ws, id, 1, revisionId, body.name, rules);
      return this.finish(tx, ws, id, 'approval_policy.create');
    });
  }

  async revise(ctx: WorkspaceContext, policyId: string, body: ApprovalPolicyBody) {
    const expected = requiredRevision(body.expected_revision);
    const rules = checkedRules(body.rules);
    return this.access.mutate(ctx, async (tx, ws) => {
      const current = await this.lockPolicy(tx, ws.id, policyId, expected);
      if (current.status === 'disabled') throw new ApiError(409, 'approval policy is disabled');
      await this.assertMembers(tx, ws.id, rules);
      const revision = current.revision + 1;
      const revisionId = newId('ayr');
      await this.writeUnique(() =>
        this.policies.update(tx.manager, ws.id, policyId, { name: body.name, rules, revision, revisionId }),
      );
      await this.recordRevision(tx, ws, policyId, revision, revisionId, body.name, rules);
      return this.finish(tx, ws, policyId, 'approval_policy.revise');
    });
  }

  /** Disables the policy (kept with its revisions); disabling a disabled policy changes nothing. */
  async disable(ctx: WorkspaceContext, policyId: string, expectedRevision: unknown) {
    const expected = requiredRevision(expectedRevision);
    return this.access.mutate(ctx, async (tx, ws) => {
      const current = await this.lockPolicy(tx, ws.id, policyId, expected);
      if (current.status === 'disabled') return toApprovalPolicyDocument(current);
      await this.policies.update(tx.manager, ws.id, policyId, { status: 'disabled' });
      return this.finish(tx, ws, policyId, 'approval_policy.disable');
    });
  }

  private async lockPolicy(tx: Tx, workspaceId: string, policyId: string, expectedRevision: number): Promise<ApprovalPolicy> {
    const row = await this.policies.lock(tx.manager, workspaceId, policyId);
    if (!row) throw new ApiError(404, NOT_FOUND);
    if (row.revision !== expectedRevision) throw new ApiError(409, 'approval policy revision changed');
    return row;
  }

  /** Every `approver_user_ids` entry must be a current member of the workspace. */
  private async assertMembers(tx: Tx, workspaceId: string, rules: ApprovalRule[]): Promise<void> {
    const ids = [...new Set(rules.flatMap((r) => r.approver_user_ids))];
    if (ids.length === 0) return;
    const members = await this.workspaces.memberIds(tx.manager, workspaceId, ids);
    const errors = rules.flatMap((rule, i) =>
      rule.approver_user_ids.some((u) => !members.has(u)) ? [{ loc: ['body', 'rules', i, 'approver_user_ids'], msg: RULE_MESSAGES.principals, type: 'value_error' }] : [],
    );
    if (errors.length > 0) throw new FieldValidationError(errors);
  }

  private async writeUnique(write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (error) {
      if (isUniqueViolation(error)) throw new ApiError(409, 'approval policy name already exists');
      throw error;
    }
  }

  private async recordRevision(tx: Tx, ws: WorkspaceContext, policyId: string, revision: number, revisionId: string, name: string, rules: ApprovalRule[]): Promise<void> {
    await this.policies.insertRevision(tx.manager, { id: revisionId, workspaceId: ws.id, policyId, revision, name, rules, createdBy: ws.operator.userId });
  }

  /**
   * Stages the snapshot (the active rule set changed), emits `approval.resolved` for the pending
   * approvals the change invalidates, writes the audit row and answers the policy.
   */
  private async finish(tx: Tx, ws: WorkspaceContext, policyId: string, action: AuditAction) {
    await this.events.emitInvalidated(tx, ws.id, (await this.policies.activeRuleSet(ws.id, tx.manager)).policy_set_hash);
    const snapshotVersion = await this.publications.stage(tx, ws.id, action);
    const row = (await this.policies.find(ws.id, policyId, tx.manager))!;
    await this.audit.record(tx, {
      workspaceId: ws.id,
      actor: ws.operator,
      action,
      target: policyId,
      detail: { policy_id: policyId, revision_id: row.revisionId, status: row.status, snapshot_version: snapshotVersion },
    });
    return toApprovalPolicyDocument(row);
  }
}
