import { HttpException, Inject, Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { WorkspaceAction } from 'src/platform/access/actions';
import { OperatorContext, WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { newId } from 'src/common/ids/ids';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { REDIS, Redis } from 'src/database/redis.module';
import { ApprovalPoliciesService } from 'src/modules/approvals/approval-policies.service';
import { ApprovalsService } from 'src/modules/approvals/approvals.service';
import { HeldCallBody } from 'src/modules/approvals/dto/approval.dto';
import { ConnectionsService } from 'src/modules/connections/connections.service';
import {
  DEMO_APPROVAL_POLICIES,
  DEMO_EMAIL,
  DEMO_KEYS,
  DEMO_MODEL,
  DEMO_POLICY,
  DEMO_PRICES,
  DEMO_REVOKED_KEY,
  DEMO_STRIPE_KEY,
  DEMO_SUBJECT,
  demoReceipts,
  demoUsage,
} from 'src/modules/demo/demo-data';
import { GatewayCallError } from 'src/modules/gateway/gateway.client';
import { IdentityService } from 'src/modules/identity/identity.service';
import { UsersRepository } from 'src/modules/identity/users.repository';
import { MembershipsRepository } from 'src/platform/tenancy/memberships.repository';
import { KeysService } from 'src/modules/keys/keys.service';
import { ModelProvidersService } from 'src/modules/model-providers/model-providers.service';
import { PricingService } from 'src/modules/model-providers/pricing.service';
import { PolicyService } from 'src/modules/policy/policy.service';
import { StreamName, StreamsService } from 'src/modules/streams/streams.service';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

export const RECEIPT_COUNT = 12;
export const USAGE_COUNT = 24;

/** What one seeding run wrote (ids only: never a key plaintext or a credential). */
export interface DemoSeedResult {
  workspace_id: string;
  operator: { user_id: string; email: string | null };
  keys: { key_id: string; agent_id: string; status: string }[];
  policy_revision_id: string | null;
  approval_policies: string[];
  approvals: { approval_id: string; tool: string; decision_status: string }[];
  connections: string[];
  receipts_written: number;
  usage_events_written: number;
  notes: string[];
}

/**
 * Fills a workspace with realistic data through the same services as the API (`npm run cli --
 * demo:seed`): keys, a published policy, a pricebook, approval policies and approvals in every
 * state, a connection and a model route sealed by the gateway when it answers, and receipts and
 * usage written to the gateway's Redis streams followed by one consumption pass.
 */
@Injectable()
export class DemoSeeder {
  constructor(
    private readonly access: WorkspaceAccess,
    private readonly memberships: MembershipsRepository,
    private readonly users: UsersRepository,
    private readonly identity: IdentityService,
    private readonly workspaces: WorkspacesService,
    private readonly keys: KeysService,
    private readonly policy: PolicyService,
    private readonly pricing: PricingService,
    private readonly approvalPolicies: ApprovalPoliciesService,
    private readonly approvalInbox: ApprovalsService,
    private readonly connections: ConnectionsService,
    private readonly models: ModelProvidersService,
    private readonly streamService: StreamsService,
    @Inject(REDIS) private readonly redis: Redis | null,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Seeds `workspaceId` as its oldest owner, or the `default` workspace of the demo operator. A refusal names its status and body. */
  async seed(workspaceId?: string): Promise<DemoSeedResult> {
    try {
      return await this.run(workspaceId);
    } catch (error) {
      throw error instanceof HttpException ? new Error(`${error.getStatus()} ${JSON.stringify(error.getResponse())}`) : error;
    }
  }

  private async run(workspaceId?: string): Promise<DemoSeedResult> {
    const { operator, workspaceId: ws } = workspaceId ? await this.owner(workspaceId) : await this.demoOperator();
    const as = (action: WorkspaceAction) => this.access.authorize(ws, operator, action);
    const result: DemoSeedResult = {
      workspace_id: ws,
      operator: { user_id: operator.userId, email: operator.email },
      keys: [],
      policy_revision_id: null,
      approval_policies: [],
      approvals: [],
      connections: [],
      receipts_written: 0,
      usage_events_written: 0,
      notes: [],
    };

    const keys = this.keys;
    for (const body of DEMO_KEYS) {
      const { key_id, agent_id, status } = await keys.mint(await as('key.manage'), body);
      result.keys.push({ key_id, agent_id, status });
    }
    const legacy = await keys.mint(await as('key.manage'), DEMO_REVOKED_KEY);
    const revoked = await keys.revoke(await as('key.manage'), legacy.key_id);
    result.keys.push({ key_id: revoked.key_id, agent_id: revoked.agent_id, status: revoked.status });

    const policy = this.policy;
    const draft = await policy.storeDraft(await as('policy.draft'), DEMO_POLICY);
    const published = await policy.publish(await as('policy.publish'), draft.draft_hash, draft.current_revision_id ?? null);
    result.policy_revision_id = published.revision_id;
    await this.pricing.replace(await as('pricing.write'), { prices: DEMO_PRICES });

    const approvalPolicies = this.approvalPolicies;
    const existing = new Set((await approvalPolicies.list(await as('workspace.read'))).approval_policies.map((p) => p.name));
    for (const body of DEMO_APPROVAL_POLICIES) {
      if (existing.has(body.name)) {
        result.notes.push(`approval policy ${body.name} already exists: kept`);
        continue;
      }
      result.approval_policies.push((await approvalPolicies.create(await as('approval.policy.manage'), body)).policy_id);
    }

    const stripe = await this.connect(as, result);
    await this.approvals(as, ws, result, result.keys[1].key_id, stripe ?? newId('conn'));
    await this.streams(ws, result, result.keys.slice(0, 3).map((k) => k.key_id), stripe ?? newId('conn'));
    return result;
  }

  private async owner(workspaceId: string): Promise<{ operator: OperatorContext; workspaceId: string }> {
    const userId = await this.memberships.oldestOwner(workspaceId);
    if (userId === undefined) throw new Error(`workspace not found: ${workspaceId}`);
    const emails = await this.users.emails([userId]);
    return { operator: { userId, email: emails.get(userId) ?? null }, workspaceId };
  }

  /** The demo operator at the configured issuer, signed in as `GET /me` would (first sight provisions a `default` workspace). */
  private async demoOperator(): Promise<{ operator: OperatorContext; workspaceId: string }> {
    const issuer = this.config.identityIssuer;
    if (!issuer) throw new Error('IDENTITY_ISSUER is not configured: set it (e.g. with DEV_IDENTITY=1) or pass --workspace ws_...');
    const operator = await this.identity.resolve({ issuer, subject: DEMO_SUBJECT, email: DEMO_EMAIL });
    const profile = await this.workspaces.profile(operator);
    return { operator, workspaceId: profile.default_workspace_id! };
  }

  /** Stripe with a restricted key and a model route, sealed by the gateway; the Stripe connection id, or null when skipped. */
  private async connect(as: (action: WorkspaceAction) => Promise<WorkspaceContext>, result: DemoSeedResult): Promise<string | null> {
    const skip = (why: string) => {
      result.notes.push(`connections skipped: ${why} (start the emulator with \`npm run emulator\` and set GATEWAY_URL)`);
      return null;
    };
    if (!this.config.serviceJwtSecret) return skip('SERVICE_JWT_SECRET is not set');
    if (!(await this.gatewayAnswers())) return skip(`the gateway at ${this.config.gatewayUrl} does not answer`);
    try {
      const connections = this.connections;
      let stripe = (await connections.list(await as('workspace.read'))).connections.find((c) => c.connector_slug === 'stripe' && c.status !== 'disabled');
      if (stripe?.status === 'active') {
        result.notes.push('stripe is already connected: kept');
      } else {
        stripe ??= (await connections.start(await as('connection.manage'), { slug: 'stripe', source: 'native' })).connection;
        stripe = await connections.restrictedKey(await as('connection.manage'), stripe.connection_id, DEMO_STRIPE_KEY);
      }
      if (stripe.status === 'active') result.connections.push(stripe.connection_id);
      else result.notes.push('stripe is pending: the snapshot had not published yet; run demo:seed again');

      const models = this.models;
      const claimed = (await models.list(await as('workspace.read'))).connections.find((c) => c.model_pattern === DEMO_MODEL.model_pattern && c.status !== 'disabled');
      if (claimed) {
        result.notes.push(`model pattern ${DEMO_MODEL.model_pattern} is already routed: kept`);
      } else {
        const { connection } = await models.create(await as('connection.manage'), DEMO_MODEL);
        if (connection.status === 'active') result.connections.push(connection.connection_id);
      }
      return stripe.status === 'active' ? stripe.connection_id : null;
    } catch (error) {
      if (error instanceof GatewayCallError) return skip(`the gateway refused the seal (HTTP ${error.upstreamStatus ?? 'no answer'}; is SERVICE_JWT_SECRET the same on both sides?)`);
      throw error;
    }
  }

  /** Any HTTP answer from GATEWAY_URL counts: only a refused or timed-out connection does not. */
  private async gatewayAnswers(): Promise<boolean> {
    try {
      await fetch(this.config.gatewayUrl, { signal: AbortSignal.timeout(2000) });
      return true;
    } catch {
      return false;
    }
  }

  /** Held calls as the gateway sends them: two pending refunds, one approved and executed, one denied at once. */
  private async approvals(as: (action: WorkspaceAction) => Promise<WorkspaceContext>, ws: string, result: DemoSeedResult, keyId: string, connectionId: string) {
    const approvals = this.approvalInbox;
    const { env } = await as('workspace.read');
    const hold = async (tool: string, amount: number, reason: string) => {
      const body: HeldCallBody = {
        request_id: newId('req'),
        key_id: keyId,
        invocation_id: newId('inv'),
        tool,
        invocation_tool: tool,
        connection_id: connectionId,
        env,
        safe_summary: { amount_usd: amount },
        reason,
      };
      return (await approvals.hold(ws, body)).approval as { approval_id: string; revision: number };
    };
    await hold('stripe.create_refund', 129.0, 'customer asked for a refund of order 1042');
    await hold('stripe.create_refund', 18.5, 'duplicate charge on invoice 2291');
    const approved = await hold('stripe.create_refund', 42.0, 'late delivery credit');
    await approvals.vote(await as('approval.decide'), approved.approval_id, { decision: 'approve', reason: 'matches the support ticket', expected_revision: approved.revision });
    await approvals.reportExecution(ws, approved.approval_id, { status: 'succeeded', receipt_id: newId('rcp'), digest: `sha256:${randomBytes(32).toString('hex')}` });
    await hold('github.create_issue', 0, 'open a tracking issue for the refund');

    const inbox = await approvals.list(await as('workspace.read'), { limit: 4 });
    result.approvals = inbox.approvals.map((a) => ({ approval_id: a.approval_id as string, tool: a.tool as string, decision_status: a.decision_status as string }));
  }

  /** Receipts and usage through the gateway's Redis streams, then one consumption pass of each. */
  private async streams(ws: string, result: DemoSeedResult, keyIds: string[], connectionId: string) {
    if (!this.redis) {
      result.notes.push('receipts and usage skipped: REDIS_URL is not set (the streams need Redis)');
      return;
    }
    const ids = { workspaceId: ws, keyIds, connectionId, now: Date.now() };
    const streams = this.streamService;
    const write = async (stream: StreamName, entries: object[]) => {
      // Commands issued in the same tick go out as one pipeline.
      await Promise.all(entries.map((entry) => this.redis!.xAdd(streams.streamKey(stream), '*', { data: JSON.stringify(entry) })));
      await streams.pass(stream);
      return entries.length;
    };
    result.receipts_written = await write('receipts', demoReceipts(ids, RECEIPT_COUNT));
    result.usage_events_written = await write('usage', demoUsage(ids, USAGE_COUNT));
  }
}
