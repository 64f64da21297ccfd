import { Env } from 'src/platform/access/context';
import { Role } from 'src/platform/access/actions';
import { FieldError } from 'src/common/http/errors';
import { canonicalJson, sha256Tagged } from 'src/common/crypto/crypto';

/** One rule of an approval policy, as stored (every list deduplicated and sorted). */
export interface ApprovalRule {
  rule_id: string;
  effect: 'allow' | 'deny';
  actions: string[];
  tools: string[];
  environments: Env[];
  approver_roles: Role[];
  approver_user_ids: string[];
  quorum: number;
}

/** A rule of the workspace's active rule set: the rule with the policy revision it belongs to. */
export interface SetRule extends ApprovalRule {
  policy_id: string;
  revision_id: string;
}

export const RULE_FIELDS = ['rule_id', 'effect', 'actions', 'tools', 'environments', 'approver_roles', 'approver_user_ids', 'quorum'] as const;

export const RULE_MESSAGES = {
  count: 'rules must contain between 1 and 100 entries',
  fields: 'rule fields are invalid',
  unique: 'rule_id must be unique',
  effect: 'effect must be allow or deny',
  actions: 'actions must explicitly match tool.call',
  toolsEmpty: 'tools must not be empty',
  toolPattern: 'tool patterns support literal names and * only',
  environments: 'environments are invalid',
  principals: 'approver principals are invalid',
  quorum: 'quorum must be 1 or 2',
} as const;

const RULE_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;
const FORBIDDEN_IN_PATTERN = /[?[\]\s]/;
const ENVS: readonly string[] = ['dev', 'stage', 'prod'];
const APPROVER_ROLES: readonly string[] = ['admin', 'owner'];

const isStringList = (value: unknown): value is string[] => Array.isArray(value) && value.every((v) => typeof v === 'string');
const normalized = <T extends string>(values: T[]): T[] => [...new Set(values)].sort();

/** The first failure of one rule (field name and message), or null when the rule is valid. */
function ruleFailure(rule: Record<string, unknown>): [string | null, string] | null {
  const keys = Object.keys(rule);
  if (keys.length !== RULE_FIELDS.length || !RULE_FIELDS.every((f) => keys.includes(f))) return [null, RULE_MESSAGES.fields];
  const { rule_id, effect, actions, tools, environments, approver_roles, approver_user_ids, quorum } = rule;
  if (typeof rule_id !== 'string' || rule_id.length > 64 || !RULE_ID.test(rule_id)) return ['rule_id', RULE_MESSAGES.fields];
  if (effect !== 'allow' && effect !== 'deny') return ['effect', RULE_MESSAGES.effect];
  if (!isStringList(actions) || actions.length !== 1 || actions[0] !== 'tool.call') return ['actions', RULE_MESSAGES.actions];
  if (!isStringList(tools) || tools.length > 100 || tools.some((t) => t.length > 256)) return ['tools', RULE_MESSAGES.fields];
  if (tools.length === 0) return ['tools', RULE_MESSAGES.toolsEmpty];
  if (tools.some((t) => t.length === 0 || FORBIDDEN_IN_PATTERN.test(t))) return ['tools', RULE_MESSAGES.toolPattern];
  if (!isStringList(environments) || environments.length < 1 || environments.length > 3 || !environments.every((e) => ENVS.includes(e))) {
    return ['environments', RULE_MESSAGES.environments];
  }
  if (!isStringList(approver_roles) || approver_roles.length > 2 || !approver_roles.every((r) => APPROVER_ROLES.includes(r))) {
    return ['approver_roles', RULE_MESSAGES.principals];
  }
  if (!isStringList(approver_user_ids) || approver_user_ids.length > 100 || !approver_user_ids.every((u) => u.startsWith('usr_') && u.length <= 64)) {
    return ['approver_user_ids', RULE_MESSAGES.principals];
  }
  if (approver_roles.length === 0 && approver_user_ids.length === 0) return ['approver_roles', RULE_MESSAGES.principals];
  if (quorum !== 1 && quorum !== 2) return ['quorum', RULE_MESSAGES.quorum];
  return null;
}

/**
 * Validates the `rules` of a create or revise body and returns them normalized, or the 422
 * entries (`loc` under `body.rules`), one per failing rule.
 */
export function validateRules(input: unknown): { rules: ApprovalRule[] } | { errors: FieldError[] } {
  if (!Array.isArray(input) || input.length < 1 || input.length > 100) {
    return { errors: [{ loc: ['body', 'rules'], msg: RULE_MESSAGES.count, type: 'value_error' }] };
  }
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  input.forEach((rule: unknown, i) => {
    const failure = rule !== null && typeof rule === 'object' && !Array.isArray(rule) ? ruleFailure(rule as Record<string, unknown>) : ([null, RULE_MESSAGES.fields] as const);
    if (failure) {
      const [field, msg] = failure;
      errors.push({ loc: field ? ['body', 'rules', i, field] : ['body', 'rules', i], msg, type: 'value_error' });
      return;
    }
    const id = (rule as ApprovalRule).rule_id;
    if (seen.has(id)) errors.push({ loc: ['body', 'rules', i, 'rule_id'], msg: RULE_MESSAGES.unique, type: 'value_error' });
    seen.add(id);
  });
  if (errors.length > 0) return { errors };
  return {
    rules: (input as ApprovalRule[]).map((r) => ({
      rule_id: r.rule_id,
      effect: r.effect,
      actions: normalized(r.actions),
      tools: normalized(r.tools),
      environments: normalized(r.environments),
      approver_roles: normalized(r.approver_roles),
      approver_user_ids: normalized(r.approver_user_ids),
      quorum: r.quorum,
    })),
  };
}

/** The rules of active policies in canonical order (policy, then rule id) with their policy revision. */
export function ruleSet(policies: { id: string; revision_id: string; rules: ApprovalRule[] }[]): SetRule[] {
  const rules = policies.flatMap((p) => p.rules.map((r): SetRule => ({ policy_id: p.id, revision_id: p.revision_id, ...r })));
  return rules.sort((a, b) => (a.policy_id === b.policy_id ? compare(a.rule_id, b.rule_id) : compare(a.policy_id, b.policy_id)));
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** `sha256:` over the canonical JSON of the active rule set: any create, revise or disable changes it. */
export function policySetHash(rules: SetRule[]): string {
  return sha256Tagged(canonicalJson(rules));
}

/** `*` matches any run of characters (also none); every other character matches itself. Linear backtracking, no regex. */
export function matchesPattern(pattern: string, name: string): boolean {
  let p = 0;
  let n = 0;
  let star = -1;
  let resume = 0;
  while (n < name.length) {
    if (p < pattern.length && pattern[p] === '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.length && pattern[p] === name[n]) {
      p++;
      n++;
    } else if (star >= 0) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}

/** The rules that select a held call of `tool` in `env`. */
export function matchingRules(rules: SetRule[], tool: string, env: Env): SetRule[] {
  return rules.filter((r) => r.actions.includes('tool.call') && r.environments.includes(env) && r.tools.some((t) => matchesPattern(t, tool)));
}

export type InitialDecision =
  | { status: 'denied'; reason: 'default_deny'; quorumRequired: 0 }
  | { status: 'pending'; reason: 'awaiting_quorum'; quorumRequired: number };

/** No matching allow rule, or any matching deny rule: denied at once. Otherwise pending for the largest matched quorum. */
export function initialDecision(matched: SetRule[]): InitialDecision {
  const allows = matched.filter((r) => r.effect === 'allow');
  if (allows.length === 0 || matched.some((r) => r.effect === 'deny')) return { status: 'denied', reason: 'default_deny', quorumRequired: 0 };
  return { status: 'pending', reason: 'awaiting_quorum', quorumRequired: Math.max(...allows.map((r) => r.quorum)) };
}

/** Eligible reviewers: the union of the matched allow rules' roles and user ids. */
export function isEligible(matched: SetRule[], userId: string, role: Role): boolean {
  return matched.some((r) => r.effect === 'allow' && ((r.approver_roles as string[]).includes(role) || r.approver_user_ids.includes(userId)));
}

export interface ActiveRuleSet {
  policy_set_hash: string;
  rules: SetRule[];
}

