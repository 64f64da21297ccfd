import { Schema, closedObject, count, env, id, nullableText, nullableTimestamp, strings, timestamp } from 'src/common/http/document-schema';
import { DECISION_STATUSES } from 'src/modules/approvals/dto/approval.dto';

const revision: Schema = { type: 'integer', minimum: 1 };
const decision: Schema = { enum: ['approve', 'deny'] };

/** One rule of an approval policy, stored normalized (core spec section 2). */
const RULE_FIELDS: Record<string, Schema> = {
  rule_id: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]*$', maxLength: 64 },
  effect: { enum: ['allow', 'deny'] },
  actions: { type: 'array', items: { const: 'tool.call' }, minItems: 1, maxItems: 1 },
  tools: { ...strings, minItems: 1, maxItems: 100 },
  environments: { type: 'array', items: env, minItems: 1, maxItems: 3 },
  approver_roles: { type: 'array', items: { enum: ['admin', 'owner'] }, maxItems: 2 },
  approver_user_ids: { ...strings, maxItems: 100 },
  quorum: { enum: [1, 2] },
};

/** An approval policy (`operator_approval_policy`). */
export const APPROVAL_POLICY_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  policy_id: id,
  workspace_id: id,
  name: { type: 'string' },
  status: { enum: ['active', 'disabled'] },
  revision,
  revision_id: id,
  rules: { type: 'array', items: closedObject(RULE_FIELDS), minItems: 1, maxItems: 100 },
  created_at: timestamp,
  updated_at: timestamp,
});

export const APPROVAL_POLICY_LIST_SCHEMA: Schema = closedObject({ approval_policies: { type: 'array', items: APPROVAL_POLICY_SCHEMA } });

/** What every view of an approval carries; `policy_snapshot.rules` are the matched rules with their policy revision. */
const APPROVAL_FIELDS: Record<string, Schema> = {
  schema_version: { const: 1 },
  approval_id: id,
  workspace_id: id,
  key_id: id,
  request_id: id,
  invocation_id: nullableText,
  tool: id,
  invocation_tool: id,
  connection_id: id,
  env,
  safe_summary: { type: 'object', properties: { amount_usd: { type: 'number' } }, additionalProperties: false },
  reason: { type: 'string' },
  decision_status: { enum: [...DECISION_STATUSES] },
  decision_reason: { enum: ['awaiting_quorum', 'quorum_met', 'default_deny', 'reviewer_deny', 'expired', 'policy_changed', 'execution_failed'] },
  execution_status: { enum: ['not_requested', 'pending', 'succeeded', 'failed'] },
  revision,
  created_at: timestamp,
  expires_at: timestamp,
  decided_at: nullableTimestamp,
  executed_at: nullableTimestamp,
  policy_snapshot: closedObject({
    policy_set_hash: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' },
    rules: { type: 'array', items: closedObject({ policy_id: id, revision_id: id, ...RULE_FIELDS }) },
  }),
  votes: { type: 'array', items: closedObject({ user_id: id, decision, reason: { type: 'string' }, created_at: timestamp }) },
  result: closedObject({ receipt_id: nullableText, error_code: nullableText, digest: nullableText }),
  quorum_required: count,
  approvals_received: count,
};

/** An approval as the gateway sees it (held calls and execution reports): no reviewer fields. */
export const GATEWAY_APPROVAL_SCHEMA: Schema = closedObject(APPROVAL_FIELDS);

/** An approval as the calling operator sees it (`operator_approval`), with whether they can vote. */
export const APPROVAL_SCHEMA: Schema = closedObject({
  ...APPROVAL_FIELDS,
  can_vote: { type: 'boolean' },
  vote_block_reason: { enum: ['not_pending', 'expired', 'frozen', 'role', 'policy_changed', 'not_eligible', 'already_voted', null] },
  current_user_vote: { oneOf: [closedObject({ decision, reason: { type: 'string' }, created_at: timestamp }), { type: 'null' }] },
});

export const APPROVAL_LIST_SCHEMA: Schema = closedObject({ approvals: { type: 'array', items: APPROVAL_SCHEMA }, next_cursor: nullableText });
