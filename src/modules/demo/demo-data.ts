import { randomBytes } from 'node:crypto';
import { newId } from 'src/common/ids/ids';
import { MintKeyDto } from 'src/modules/keys/dto/mint-key.dto';

/** The operator `demo:seed` provisions when no workspace is named (sign in with `dev:token --sub demo`). */
export const DEMO_SUBJECT = 'demo';
export const DEMO_EMAIL = 'demo@example.com';

export const DEMO_KEYS: MintKeyDto[] = [
  { agent_id: 'support-bot', rpm: 600, tpm: 200_000, budget_micros_usd_month: 50_000_000, attributes: { team: 'support' } },
  { agent_id: 'billing-agent', allowed_tools: ['stripe.*'], allowed_models: ['gpt-4o*'], rpm: 120, budget_micros_usd_month: 20_000_000, attributes: { team: 'payments' } },
  { agent_id: 'research-agent', scopes: ['llm'], tools_mode: 'progressive', allowed_models: ['claude-*', 'gpt-4o*'], attributes: { team: 'research' } },
];
/** Minted, then revoked: the key list shows a revoked key too. */
export const DEMO_REVOKED_KEY: MintKeyDto = { agent_id: 'legacy-agent' };

export const DEMO_POLICY = `// Demo policy (demo:seed): keys may list and call tools and invoke models,
// except where a forbid below says otherwise.
permit (
  principal,
  action in [Gateway::Action::"tool.list", Gateway::Action::"tool.call", Gateway::Action::"llm.invoke"],
  resource
);

// Stripe tools only for keys of the payments team.
forbid (principal, action == Gateway::Action::"tool.call", resource)
when { resource.connector == "stripe" }
unless { context.key.attributes.hasTag("team") && context.key.attributes.getTag("team") == "payments" };

// No model invocations over the MCP surface.
forbid (principal, action == Gateway::Action::"llm.invoke", resource) when { context.surface == "mcp" };
`;

export const DEMO_PRICES = [
  { model: 'gpt-4o*', input_micros_usd_per_mtok: 2_500_000, output_micros_usd_per_mtok: 10_000_000, cached_micros_usd_per_mtok: 1_250_000, reasoning_micros_usd_per_mtok: 0 },
  { model: 'claude-*', input_micros_usd_per_mtok: 3_000_000, output_micros_usd_per_mtok: 15_000_000, cached_micros_usd_per_mtok: 300_000, reasoning_micros_usd_per_mtok: 15_000_000 },
];

const ALL_ENVS = ['dev', 'stage', 'prod'];
export const DEMO_APPROVAL_POLICIES = [
  {
    name: 'payments',
    rules: [
      { rule_id: 'refunds', effect: 'allow', actions: ['tool.call'], tools: ['stripe.create_refund'], environments: ALL_ENVS, approver_roles: ['admin', 'owner'], approver_user_ids: [], quorum: 1 },
      { rule_id: 'invoices', effect: 'allow', actions: ['tool.call'], tools: ['stripe.create_invoice'], environments: ALL_ENVS, approver_roles: ['owner'], approver_user_ids: [], quorum: 1 },
    ],
  },
  {
    name: 'production-safety',
    rules: [{ rule_id: 'no-deletes-in-prod', effect: 'deny', actions: ['tool.call'], tools: ['*.delete_*'], environments: ['prod'], approver_roles: ['owner'], approver_user_ids: [], quorum: 1 }],
  },
];

export const DEMO_STRIPE_KEY = 'rk_test_demo_51HdemoRestrictedKey0001';
export const DEMO_MODEL = { provider: 'provider_a' as const, api_key: 'sk-demo-provider-a-0001', model_pattern: 'gpt-*', upstream_model: 'gpt-4o' };

const HOUR = 3600_000;
const rand = (n: number) => randomBytes(2).readUInt16BE() % n;
const pick = <T>(values: readonly T[]): T => values[rand(values.length)];

interface StreamIds {
  workspaceId: string;
  keyIds: string[];
  connectionId: string;
  now: number;
}

const TOOL_CALLS = [
  { tool: 'stripe.list_charges', state: 'completed', decision: 'allow', dispatch_state: 'accepted', vendor_http_status: 200 },
  { tool: 'stripe.create_refund', state: 'awaiting_approval', decision: 'approval_required', dispatch_state: 'not_attempted', vendor_http_status: null },
  { tool: 'github.list_issues', state: 'completed', decision: 'allow', dispatch_state: 'accepted', vendor_http_status: 200 },
  { tool: 'slack.post_message', state: 'denied', decision: 'deny', dispatch_state: 'not_attempted', vendor_http_status: null },
  { tool: 'github.create_issue', state: 'completed', decision: 'allow', dispatch_state: 'accepted', vendor_http_status: 201 },
] as const;

/** Receipt revisions as the gateway writes them to `{prefix}:receipts` (CONTRACT.md 4.4), spread over the last day. */
export function demoReceipts({ workspaceId, keyIds, connectionId, now }: StreamIds, count: number) {
  return Array.from({ length: count }, (_, i) => {
    const call = TOOL_CALLS[i % TOOL_CALLS.length];
    const occurred = new Date(now - (i + 1) * 2 * HOUR + rand(HOUR));
    return {
      workspace_id: workspaceId,
      receipt_id: newId('rcp'),
      invocation_id: newId('inv'),
      receipt_revision: 1,
      tool: call.tool,
      key_id: pick(keyIds),
      connection_id: connectionId,
      state: call.state,
      decision: call.decision,
      dispatch_state: call.dispatch_state,
      evidence_trust: 'gateway_observed',
      verification_state: 'not_required',
      verification_method: 'none',
      effect_claim: call.dispatch_state === 'accepted' ? 'accepted' : null,
      verification_evidence_trust: null,
      vendor_http_status: call.vendor_http_status,
      upstream_id: call.dispatch_state === 'accepted' ? `up_${randomBytes(4).toString('hex')}` : null,
      latency_ms: 40 + rand(400),
      usd_micros: 0,
      attempt_count: 1,
      occurred_at: occurred.toISOString(),
      updated_at: new Date(occurred.getTime() + 1000).toISOString(),
      idempotency_key: `idem-${randomBytes(4).toString('hex')}`,
      request_id: newId('req'),
      policy_id: null,
      policy_revision_id: null,
      envelope: { demo: true },
    };
  });
}

const MODELS = [
  { model: 'gpt-4o', provider: 'provider_a', in: 2.5, out: 10 },
  { model: 'gpt-4o-mini', provider: 'provider_a', in: 2.5, out: 10 },
  { model: 'claude-3-5-sonnet', provider: 'provider_b', in: 3, out: 15 },
] as const;

/** Usage events as the gateway writes them to `{prefix}:usage`: model calls priced with the demo pricebook, and tool calls. */
export function demoUsage({ workspaceId, keyIds, now }: StreamIds, count: number) {
  return Array.from({ length: count }, (_, i) => {
    const occurred = new Date(now - (i + 1) * HOUR + rand(HOUR / 2)).toISOString();
    const base = { event_id: newId('evt'), workspace_id: workspaceId, key_id: pick(keyIds), occurred_at: occurred, tokens_cached: 0, tokens_reasoning: 0 };
    if (i % 4 === 3) {
      return { ...base, kind: 'tool', model: null, provider: null, tool: pick(TOOL_CALLS).tool, pricing_status: 'unknown', usd_micros: 0, tokens_in: 0, tokens_out: 0, outcome: 'ok' };
    }
    const m = pick(MODELS);
    const tokensIn = 200 + rand(4000);
    const tokensOut = 50 + rand(800);
    const usd = Math.round(tokensIn * m.in + tokensOut * m.out);
    return { ...base, kind: 'llm', model: m.model, provider: m.provider, tool: null, pricing_status: 'known', usd_micros: usd, tokens_in: tokensIn, tokens_out: tokensOut, outcome: i % 11 === 5 ? 'failure' : 'ok' };
  });
}
