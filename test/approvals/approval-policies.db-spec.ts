import { ApprovalPoliciesRepository } from 'src/modules/approvals/approval-policies.repository';
import { ApprovalPolicyRevision } from 'src/modules/approvals/entities/approval-policy-revision.entity';
import { ApprovalRule, policySetHash, ruleSet } from 'src/modules/approvals/rules';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

const rule = (rule_id: string): ApprovalRule => ({
  rule_id, effect: 'allow', actions: ['tool.call'], tools: ['*'], environments: ['prod'], approver_roles: ['admin'], approver_user_ids: [], quorum: 1,
});

describe('ApprovalPoliciesRepository', () => {
  let db: RepositoryDatabase;
  let policies: ApprovalPoliciesRepository;
  const ws = 'ws_apy';

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    policies = new ApprovalPoliciesRepository(db.dataSource);
    await db.dataSource.query(`INSERT INTO organizations (id) VALUES ('org_apy')`);
    await db.dataSource.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, 'org_apy', 'a', 'prod')`, [ws]);
    await db.dataSource.query(`INSERT INTO users (id, issuer, subject) VALUES ('usr_a', 'i', 'a')`);
  });
  afterAll(() => db.close());

  it('inserts, lists by name, finds, and refuses a second policy of the same name', async () => {
    const m = db.dataSource.manager;
    expect(await policies.activeRuleSet(ws)).toEqual({ policy_set_hash: policySetHash([]), rules: [] });
    await policies.insert(m, { id: 'apy_2', workspaceId: ws, name: 'b', status: 'active', revision: 1, revisionId: 'ayr_2', rules: [rule('r2')] });
    await policies.insert(m, { id: 'apy_1', workspaceId: ws, name: 'a', status: 'active', revision: 1, revisionId: 'ayr_1', rules: [rule('r1')] });
    await expect(policies.insert(m, { id: 'apy_3', workspaceId: ws, name: 'a', status: 'active', revision: 1, revisionId: 'ayr_3', rules: [] })).rejects.toThrow(
      /approval_policies_workspace_name_key/,
    );
    expect((await policies.list(ws)).map((p) => p.id)).toEqual(['apy_1', 'apy_2']);
    expect(await policies.list('ws_none')).toEqual([]);
    expect(await policies.find(ws, 'apy_1')).toMatchObject({ name: 'a', rules: [rule('r1')], revision: 1 });
    expect(await policies.find('ws_none', 'apy_1')).toBeNull();
  });

  it('updates a policy and stamps updated_at; the active rule set follows', async () => {
    const m = db.dataSource.manager;
    const before = (await policies.find(ws, 'apy_1'))!;
    await policies.update(m, ws, 'apy_1', { name: 'a2', rules: [rule('r9')], revision: 2, revisionId: 'ayr_1b' });
    const after = (await policies.find(ws, 'apy_1'))!;
    expect(after).toMatchObject({ name: 'a2', rules: [rule('r9')], revision: 2, revisionId: 'ayr_1b', status: 'active' });
    expect(after.updatedAt.getTime()).toBeGreaterThan(before.updatedAt.getTime());
    const expected = ruleSet([
      { id: 'apy_1', revision_id: 'ayr_1b', rules: [rule('r9')] },
      { id: 'apy_2', revision_id: 'ayr_2', rules: [rule('r2')] },
    ]);
    expect(await policies.activeRuleSet(ws)).toEqual({ policy_set_hash: policySetHash(expected), rules: expected });
    await policies.update(m, ws, 'apy_2', { status: 'disabled' });
    expect((await policies.activeRuleSet(ws)).rules.map((r) => r.policy_id)).toEqual(['apy_1']);
  });

  it('locks a policy for update and records revisions', async () => {
    await db.dataSource.transaction(async (m) => {
      expect((await policies.lock(m, ws, 'apy_1'))!.id).toBe('apy_1');
      expect(await policies.lock(m, ws, 'apy_none')).toBeNull();
      const blocked = db.dataSource.transaction(async (m2) => {
        await m2.query(`SET LOCAL lock_timeout = '200ms'`);
        return policies.lock(m2, ws, 'apy_1');
      });
      await expect(blocked).rejects.toThrow(/lock timeout/);
      // Read in the caller's transaction.
      await policies.update(m, ws, 'apy_1', { name: 'in-tx' });
      expect((await policies.find(ws, 'apy_1', m))!.name).toBe('in-tx');
    });
    await policies.insertRevision(db.dataSource.manager, { id: 'ayr_x', workspaceId: ws, policyId: 'apy_1', revision: 3, name: 'in-tx', rules: [rule('r9')], createdBy: 'usr_a' });
    await expect(
      policies.insertRevision(db.dataSource.manager, { id: 'ayr_y', workspaceId: ws, policyId: 'apy_1', revision: 3, name: 'dup', rules: [], createdBy: null }),
    ).rejects.toThrow(/approval_policy_revisions_policy_revision_key/);
    expect(await db.dataSource.manager.findOneBy(ApprovalPolicyRevision, { id: 'ayr_x' })).toMatchObject({ revision: 3, createdBy: 'usr_a', rules: [rule('r9')] });
  });
});
