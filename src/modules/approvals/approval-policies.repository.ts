import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { ApprovalPolicyRevision } from 'src/modules/approvals/entities/approval-policy-revision.entity';
import { ApprovalPolicy } from 'src/modules/approvals/entities/approval-policy.entity';
import { ActiveRuleSet, policySetHash, ruleSet } from 'src/modules/approvals/rules';

/** Every statement on `approval_policies` and `approval_policy_revisions`. */
@Injectable()
export class ApprovalPoliciesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The workspace's policies by name (then id). */
  list(workspaceId: string): Promise<ApprovalPolicy[]> {
    return this.dataSource.manager.find(ApprovalPolicy, { where: { workspaceId }, order: { name: 'ASC', id: 'ASC' } });
  }

  find(workspaceId: string, id: string, manager: EntityManager = this.dataSource.manager): Promise<ApprovalPolicy | null> {
    return manager.findOneBy(ApprovalPolicy, { workspaceId, id });
  }

  /** The policy under a row lock (a revise or disable). */
  lock(manager: EntityManager, workspaceId: string, id: string): Promise<ApprovalPolicy | null> {
    return manager.findOne(ApprovalPolicy, { where: { workspaceId, id }, lock: { mode: 'pessimistic_write' } });
  }

  /** Inserts a policy (a unique violation on the name is the caller's 409). */
  async insert(manager: EntityManager, policy: Omit<ApprovalPolicy, 'createdAt' | 'updatedAt'>): Promise<void> {
    await manager.insert(ApprovalPolicy, policy);
  }

  /** Updates a policy's columns and stamps `updated_at` on the database clock. */
  async update(
    manager: EntityManager,
    workspaceId: string,
    id: string,
    values: Partial<Pick<ApprovalPolicy, 'name' | 'rules' | 'revision' | 'revisionId' | 'status'>>,
  ): Promise<void> {
    await manager.update(ApprovalPolicy, { workspaceId, id }, { ...values, updatedAt: () => 'clock_timestamp()' });
  }

  async insertRevision(manager: EntityManager, revision: Omit<ApprovalPolicyRevision, 'createdAt'>): Promise<void> {
    await manager.insert(ApprovalPolicyRevision, revision);
  }

  /** The workspace's active approval rules and their hash: the snapshot's `approval_rules` part (read in `manager`'s transaction when given). */
  async activeRuleSet(workspaceId: string, manager: EntityManager = this.dataSource.manager): Promise<ActiveRuleSet> {
    const policies = await manager.find(ApprovalPolicy, { select: { id: true, revisionId: true, rules: true }, where: { workspaceId, status: 'active' } });
    const rules = ruleSet(policies.map((p) => ({ id: p.id, revision_id: p.revisionId, rules: p.rules })));
    return { policy_set_hash: policySetHash(rules), rules };
  }
}
