import { effectiveDecision, voteBlock } from 'src/modules/approvals/approval-state';
import { ApprovalRule, initialDecision, isEligible, matchesPattern, matchingRules, policySetHash, ruleSet, SetRule, validateRules } from 'src/modules/approvals/rules';

const rule = (over: Partial<ApprovalRule> = {}): ApprovalRule => ({
  rule_id: 'r1',
  effect: 'allow',
  actions: ['tool.call'],
  tools: ['stripe.*'],
  environments: ['prod'],
  approver_roles: ['owner'],
  approver_user_ids: [],
  quorum: 1,
  ...over,
});
const setRule = (over: Partial<SetRule> = {}): SetRule => ({ policy_id: 'apy_1', revision_id: 'ayr_1', ...rule(), ...over });
const messageOf = (input: unknown) => {
  const result = validateRules(input);
  return 'errors' in result ? result.errors.map((e) => [e.loc.join('.'), e.msg]) : null;
};

describe('validateRules', () => {
  it('normalizes every list: deduplicated and sorted', () => {
    const result = validateRules([rule({ tools: ['b', 'a', 'b'], environments: ['prod', 'dev', 'prod'], approver_roles: ['owner', 'admin'], approver_user_ids: ['usr_b', 'usr_a', 'usr_b'] })]);
    expect(result).toEqual({ rules: [rule({ tools: ['a', 'b'], environments: ['dev', 'prod'], approver_roles: ['admin', 'owner'], approver_user_ids: ['usr_a', 'usr_b'] })] });
  });

  it.each([
    [[], 'body.rules', 'rules must contain between 1 and 100 entries'],
    ['x', 'body.rules', 'rules must contain between 1 and 100 entries'],
    [Array.from({ length: 101 }, (_, i) => rule({ rule_id: `r${i}` })), 'body.rules', 'rules must contain between 1 and 100 entries'],
    [[null], 'body.rules.0', 'rule fields are invalid'],
    [[{ ...rule(), extra: 1 }], 'body.rules.0', 'rule fields are invalid'],
    [[Object.fromEntries(Object.entries(rule()).filter(([k]) => k !== 'quorum'))], 'body.rules.0', 'rule fields are invalid'],
    [[rule({ rule_id: '-bad' })], 'body.rules.0.rule_id', 'rule fields are invalid'],
    [[rule({ rule_id: 'a'.repeat(65) })], 'body.rules.0.rule_id', 'rule fields are invalid'],
    [[rule({ effect: 'maybe' as never })], 'body.rules.0.effect', 'effect must be allow or deny'],
    [[rule({ actions: ['*'] })], 'body.rules.0.actions', 'actions must explicitly match tool.call'],
    [[rule({ actions: ['tool.call', 'tool.list'] })], 'body.rules.0.actions', 'actions must explicitly match tool.call'],
    [[rule({ tools: [] })], 'body.rules.0.tools', 'tools must not be empty'],
    [[rule({ tools: ['a?b'] })], 'body.rules.0.tools', 'tool patterns support literal names and * only'],
    [[rule({ tools: ['a[b]'] })], 'body.rules.0.tools', 'tool patterns support literal names and * only'],
    [[rule({ tools: ['a b'] })], 'body.rules.0.tools', 'tool patterns support literal names and * only'],
    [[rule({ tools: ['x'.repeat(257)] })], 'body.rules.0.tools', 'rule fields are invalid'],
    [[rule({ environments: [] })], 'body.rules.0.environments', 'environments are invalid'],
    [[rule({ environments: ['qa' as never] })], 'body.rules.0.environments', 'environments are invalid'],
    [[rule({ approver_roles: ['developer' as never] })], 'body.rules.0.approver_roles', 'approver principals are invalid'],
    [[rule({ approver_roles: [], approver_user_ids: [] })], 'body.rules.0.approver_roles', 'approver principals are invalid'],
    [[rule({ approver_user_ids: ['bob'] })], 'body.rules.0.approver_user_ids', 'approver principals are invalid'],
    [[rule({ quorum: 3 })], 'body.rules.0.quorum', 'quorum must be 1 or 2'],
    [[rule(), rule()], 'body.rules.1.rule_id', 'rule_id must be unique'],
  ])('refuses %j', (input, loc, msg) => {
    expect(messageOf(input)).toEqual([[loc, msg]]);
  });
});

describe('matching', () => {
  it.each([
    ['stripe.*', 'stripe.refund', true],
    ['stripe.*', 'github.issue', false],
    ['*', 'anything', true],
    ['*.delete', 'github.repo.delete', true],
    ['a*b*c', 'aXXbYYc', true],
    ['a*b*c', 'aXXbYY', false],
    ['exact', 'exact', true],
    ['exact', 'exactly', false],
  ])('%s against %s is %s', (pattern, name, expected) => {
    expect(matchesPattern(pattern, name)).toBe(expected);
  });

  it('is linear on adversarial patterns', () => {
    expect(matchesPattern(`${'a*'.repeat(100)}b`, 'a'.repeat(256))).toBe(false);
  });

  it('selects by tool and environment', () => {
    const rules = [setRule({ rule_id: 'a' }), setRule({ rule_id: 'b', environments: ['dev'] }), setRule({ rule_id: 'c', tools: ['github.*'] })];
    expect(matchingRules(rules, 'stripe.refund', 'prod').map((r) => r.rule_id)).toEqual(['a']);
  });
});

describe('decision rule', () => {
  it('denies at once without an allow rule or with any deny rule', () => {
    expect(initialDecision([])).toEqual({ status: 'denied', reason: 'default_deny', quorumRequired: 0 });
    expect(initialDecision([setRule(), setRule({ rule_id: 'd', effect: 'deny' })]).status).toBe('denied');
  });

  it('waits for the largest matched quorum', () => {
    expect(initialDecision([setRule(), setRule({ rule_id: 'b', quorum: 2 })])).toEqual({ status: 'pending', reason: 'awaiting_quorum', quorumRequired: 2 });
  });

  it('makes the union of allow rules\' roles and users eligible', () => {
    const rules = [setRule({ approver_roles: ['owner'] }), setRule({ rule_id: 'b', approver_roles: [], approver_user_ids: ['usr_x'] })];
    expect(isEligible(rules, 'usr_y', 'owner')).toBe(true);
    expect(isEligible(rules, 'usr_x', 'admin')).toBe(true);
    expect(isEligible(rules, 'usr_y', 'admin')).toBe(false);
  });

  it('hashes the rule set canonically: order of policies does not matter, a revision does', () => {
    const a = { id: 'apy_a', revision_id: 'ayr_1', rules: [rule()] };
    const b = { id: 'apy_b', revision_id: 'ayr_2', rules: [rule()] };
    expect(policySetHash(ruleSet([a, b]))).toBe(policySetHash(ruleSet([b, a])));
    expect(policySetHash(ruleSet([a, b]))).not.toBe(policySetHash(ruleSet([a, { ...b, revision_id: 'ayr_3' }])));
    expect(policySetHash([])).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});

describe('effective status and vote blocks', () => {
  const now = new Date('2030-01-01T00:00:00.000Z');
  const base = {
    status: 'pending' as const,
    decision_reason: 'awaiting_quorum' as const,
    execution_status: 'not_requested' as const,
    policy_set_hash: 'h1',
    matched_rules: [setRule()],
    expires_at: new Date(now.getTime() + 1000),
  };
  const owner = { userId: 'usr_o', role: 'owner' as const, frozen: false };

  it('reads expired past expires_at (before invalidated), invalidated under another hash, else as stored', () => {
    expect(effectiveDecision(base, 'h1', now)).toEqual({ status: 'pending', reason: 'awaiting_quorum' });
    expect(effectiveDecision(base, 'h2', now)).toEqual({ status: 'invalidated', reason: 'policy_changed' });
    expect(effectiveDecision({ ...base, expires_at: now }, 'h2', now)).toEqual({ status: 'expired', reason: 'expired' });
    const executed = { ...base, status: 'approved' as const, decision_reason: 'quorum_met' as const, execution_status: 'succeeded' as const, expires_at: now };
    expect(effectiveDecision(executed, 'h2', now)).toEqual({ status: 'approved', reason: 'quorum_met' });
    const unexecuted = { ...executed, execution_status: 'pending' as const };
    expect(effectiveDecision(unexecuted, 'h1', now).status).toBe('expired');
  });

  it('names the first reason a reviewer cannot vote', () => {
    expect(voteBlock(base, 'h1', now, owner, [])).toBeNull();
    expect(voteBlock(base, 'h1', now, { ...owner, role: 'viewer' }, [])).toBe('role');
    expect(voteBlock(base, 'h1', now, { ...owner, frozen: true }, [])).toBe('frozen');
    expect(voteBlock({ ...base, expires_at: now }, 'h1', now, owner, [])).toBe('expired');
    expect(voteBlock(base, 'h2', now, owner, [])).toBe('policy_changed');
    expect(voteBlock({ ...base, status: 'denied' }, 'h1', now, owner, [])).toBe('not_pending');
    expect(voteBlock(base, 'h1', now, { ...owner, role: 'admin' }, [])).toBe('not_eligible');
    expect(voteBlock(base, 'h1', now, owner, ['usr_o'])).toBe('already_voted');
  });
});
