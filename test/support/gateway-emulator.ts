/**
 * Gateway emulator: a test double of the gateway's internal API that control calls
 * (CONTRACT.md 4.3 and 5). A real HTTP server on 127.0.0.1 with an ephemeral port.
 *
 *   const gw = await GatewayEmulator.start();          // verifies tokens signed with test/support/app's SERVICE_SECRET
 *   GatewayEmulator.start(secret, 8080)                // another secret, a fixed port (`npm run emulator`)
 *   const t = await startTestApp({ GATEWAY_URL: gw.url });
 *   gw.calls                                           // every request, in order: { path, body, status }
 *   gw.callsTo('/internal/v1/credentials/seal')        // the same, for one path
 *   gw.fail('/internal/v1/oauth/exchange', 500)        // answer that status (optional JSON body) until reset()
 *   gw.hang('/internal/v1/credentials/refresh')        // never answer that path until reset() or stop()
 *   gw.reset()                                         // clears switches and recorded calls
 *   gw.unseal(envelope)                                // { kind, secret } inside an envelope it issued
 *   gw.tokenLifetimeS = 60                             // `expires_at` of exchanged/refreshed tokens (default 3600)
 *   await gw.readSnapshot({ redis, prefix, jwks }, ws)   // the published snapshot, verified with control's public JWKS
 *   await gw.emitDecisions({ redis, prefix, jwks }, ws, requests) // authorize with the published policy and XADD receipts carrying it
 *   gw.resolveKeysWith({ redis, prefix, controlUrl })  // serve GET /v1/key: an agent's virtual key, as the gateway resolves it
 *   await gw.followSnapshots({ redis, subscriber, prefix, jwks, controlUrl }, 'gw-1') // apply every announced snapshot at once and report it (gw.reports)
 *   await gw.applyFromControl({ controlUrl, jwks }, ws, 'gw-1') // the HTTP fallback: GET the snapshot, verify, report applied
 *   await gw.stop()
 *
 * Behaviour: every call needs a service JWT (`iss` control, `aud` gateway) or answers 401.
 * POST /internal/v1/credentials/seal also needs a capability JWT (`aud` gateway-seal, claims
 * `ws`, `conn`, `apd`, integer `rev`, a `jti` never seen before, lifetime <= 60 s) or answers 403;
 * it seals `secret` with AES-256-GCM under a test key and answers `envelope`, `key_id`, `last4`.
 * POST /internal/v1/oauth/exchange and /credentials/refresh answer fresh access and refresh
 * envelopes (refresh checks that `refresh_envelope` is one of its own refresh envelopes, else 400
 * `{error: {code: "invalid_grant"}}`). POST /internal/v1/evidence/evaluate answers 202.
 * Requests are recorded before a switch applies, so a failed or hanging call is still recorded.
 *
 * Snapshots: like a gateway, the emulator applies only a snapshot whose `integrity` verifies
 * (CONTRACT.md 4.5): the digest recomputed from the content and the detached signature checked
 * with control's public JWKS (`GET /.well-known/control-signing-keys.json`); anything else throws
 * `snapshot refused: <reason>`.
 *
 * Decisions: `emitDecisions` plays the gateway's authorization (CONTRACT.md 4.4): it reads the
 * workspace's published snapshot from control's Redis key (verified as above), evaluates each request with cedar-wasm
 * against its policy (the default policy while none is published) and the snapshot's entities,
 * and XADDs one receipt revision per request to `{prefix}:receipts` with `decision` and
 * `envelope.authorization` (the request, the decision, `policy_revision_id`, the determining
 * policies by `@id` or position).

 * Agent side (after `resolveKeysWith`): GET /v1/key with `Authorization: Bearer <virtual key>`
 * resolves the key as docs/gateway-integration.md asks a gateway to: `GET {prefix}:key:{sha256}`
 * from Redis, on a miss (or Redis down) `GET {controlUrl}/internal/v1/keys/{sha256}` with a service
 * token; it answers 200 with the key context when its `status` is `active`, `expires_at` has not
 * passed and `valid_until` (a secret replaced by a rotation) is null or still ahead, else 401
 * `{error: {code: "invalid_api_key"}}`.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { decodeJwt, jwtVerify, SignJWT } from 'jose';
import { isAuthorized } from '@cedar-policy/cedar-wasm/nodejs';
import type { Redis } from 'src/database/redis.module';
import { DEFAULT_POLICY } from 'src/modules/policy/dto/policy.document';
import { guardCedarCalls } from 'src/modules/policy/cedar-wasm';
import { splitPolicies } from 'src/modules/policy/policy-source';
import { verifyServiceToken } from 'test/support/service-token';
import { Jwks } from 'src/common/signing/jws';
import { verifySnapshot } from 'src/modules/publication/snapshot-integrity';

/** Where the emulator reads snapshots: control's Redis and prefix, and control's public keys. */
export interface SnapshotSource {
  redis: Redis;
  prefix: string;
  jwks: Jwks;
}

/** One authorization request as the gateway builds it: entity uids are `{type, id}`; `entities` exclude the workspace entity. */
export interface DecisionRequest {
  principal: { type: string; id: string };
  action: { type: string; id: string };
  resource: { type: string; id: string };
  context: Record<string, unknown>;
  entities: unknown[];
}

/** What `emitDecisions` wrote for one request. */
export interface EmittedDecision {
  receipt_id: string;
  decision: 'allow' | 'deny';
  policy_revision_id: string | null;
  determining_policies: string[];
}

export interface GatewayCall {
  path: string;
  body: Record<string, unknown>;
  status: number | 'hung';
}

/** Where the emulated gateway reads key contexts: Redis first, control's internal lookup on a miss. */
export interface KeySource {
  redis: Redis;
  prefix: string;
  controlUrl: string;
}

interface KeyContext {
  status: string;
  expires_at: string | null;
  valid_until: string | null;
}

type Switch = { kind: 'fail'; status: number; body: unknown } | { kind: 'hang' } | { kind: 'hold'; released: Promise<void> };

const KEY_ID = 'gwk_emulator_1';
/** The service secret of test/support/app (SERVICE_SECRET); not imported so this file stands alone. */
const DEFAULT_SECRET = 'test-service-secret-0123456789abcdef';
const encoder = new TextEncoder();

/** Control's answer to one applied report the emulator sent (status 0: the snapshot was refused before any report). */
export interface AppliedAnswer {
  workspaceId: string;
  version: number;
  status: number;
  body: unknown;
}

export class GatewayEmulator {
  readonly calls: GatewayCall[] = [];
  /** Every applied report sent by `followSnapshots` / `applyFromControl`, with control's answer, in order. */
  readonly reports: AppliedAnswer[] = [];
  url = '';
  tokenLifetimeS = 3600;
  private server!: Server;
  private readonly key = randomBytes(32);
  private readonly switches = new Map<string, Switch>();
  private readonly seenJti = new Set<string>();
  private readonly hung = new Set<ServerResponse>();
  private keySource?: KeySource;

  private constructor(private readonly secret: string) {}

  static async start(secret = DEFAULT_SECRET, port = 0): Promise<GatewayEmulator> {
    guardCedarCalls(); // emitDecisions calls Cedar on this thread
    const gw = new GatewayEmulator(secret);
    gw.server = createServer((req, res) => void gw.handle(req, res));
    await new Promise<void>((resolve) => gw.server.listen(port, '127.0.0.1', resolve));
    gw.url = `http://127.0.0.1:${(gw.server.address() as AddressInfo).port}`;
    return gw;
  }

  resolveKeysWith(source: KeySource): void {
    this.keySource = source;
  }

  callsTo(path: string): GatewayCall[] {
    return this.calls.filter((c) => c.path === path);
  }

  fail(path: string, status: number, body: unknown = { error: { code: 'emulated_failure', message: 'secret-bearing upstream detail' } }): void {
    this.switches.set(path, { kind: 'fail', status, body });
  }

  hang(path: string): void {
    this.switches.set(path, { kind: 'hang' });
  }

  /** Holds calls to `path` until the returned function is called, then answers them as usual. */
  hold(path: string): () => void {
    let release!: () => void;
    this.switches.set(path, { kind: 'hold', released: new Promise<void>((resolve) => (release = resolve)) });
    return () => {
      this.switches.delete(path);
      release();
    };
  }

  reset(): void {
    this.switches.clear();
    this.calls.length = 0;
    for (const res of this.hung) res.destroy();
    this.hung.clear();
  }

  seal(kind: string, secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify({ kind, secret }), 'utf8'), cipher.final()]);
    return `gwenv1.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`;
  }

  unseal(envelope: string): { kind: string; secret: string } | null {
    if (!envelope.startsWith('gwenv1.')) return null;
    try {
      const raw = Buffer.from(envelope.slice('gwenv1.'.length), 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8'));
    } catch {
      return null;
    }
  }

  async stop(): Promise<void> {
    this.reset();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    } catch {
      body = {};
    }
    const path = (req.url ?? '').split('?')[0];
    const call: GatewayCall = { path, body, status: 0 };
    this.calls.push(call);
    const reply = (status: number, payload?: unknown) => {
      call.status = status;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(payload === undefined ? '' : JSON.stringify(payload));
    };

    const sw = this.switches.get(path);
    if (sw?.kind === 'hang') {
      call.status = 'hung';
      this.hung.add(res);
      return;
    }
    if (sw?.kind === 'fail') return reply(sw.status, sw.body);
    if (sw?.kind === 'hold') await sw.released;

    const auth = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    if (path === '/v1/key' && req.method === 'GET' && this.keySource) {
      const context = auth ? await this.resolveKey(this.keySource, auth[1]) : null;
      return context ? reply(200, context) : reply(401, { error: { code: 'invalid_api_key' } });
    }
    if (req.method !== 'POST' || !auth || !verifyServiceToken(auth[1], this.secret, 'control', 'gateway')) {
      return reply(401, { error: { code: 'unauthorized' } });
    }
    switch (path) {
      case '/internal/v1/credentials/seal': {
        if (!(await this.capabilityAccepted(body.capability))) return reply(403, { error: { code: 'capability_rejected' } });
        if (typeof body.secret !== 'string' || typeof body.secret_kind !== 'string') return reply(400, { error: { code: 'invalid_request' } });
        return reply(200, { envelope: this.seal(body.secret_kind, body.secret), key_id: KEY_ID, last4: body.secret.slice(-4) });
      }
      case '/internal/v1/oauth/exchange': {
        for (const field of ['workspace_id', 'connection_id', 'connector_slug', 'code', 'code_verifier', 'redirect_uri', 'client_id']) {
          if (typeof body[field] !== 'string') return reply(400, { error: { code: 'invalid_request' } });
        }
        return reply(200, { ...this.grant(), last4: randomBytes(2).toString('hex') });
      }
      case '/internal/v1/credentials/refresh': {
        const refresh = typeof body.refresh_envelope === 'string' ? this.unseal(body.refresh_envelope) : null;
        if (refresh?.kind !== 'oauth_refresh_token') return reply(400, { error: { code: 'invalid_grant' } });
        return reply(200, this.grant());
      }
      case '/internal/v1/evidence/evaluate':
        return reply(202);
      default:
        return reply(404, { error: { code: 'not_found' } });
    }
  }

  /** The workspace's published snapshot, verified with the JWKS; throws `snapshot refused: <reason>` when it does not verify. */
  async readSnapshot(source: SnapshotSource, workspaceId: string): Promise<Record<string, unknown>> {
    const raw = await source.redis.get(`${source.prefix}:snapshot:${workspaceId}`);
    if (raw === null) throw new Error(`no published snapshot for ${workspaceId}`);
    let snapshot: unknown;
    try {
      snapshot = JSON.parse(raw);
    } catch {
      throw new Error('snapshot refused: not JSON');
    }
    const check = verifySnapshot(snapshot, source.jwks);
    if (!check.ok) throw new Error(`snapshot refused: ${check.reason}`);
    return snapshot as Record<string, unknown>;
  }

  async emitDecisions(target: SnapshotSource, workspaceId: string, requests: DecisionRequest[], occurredAt = new Date()): Promise<EmittedDecision[]> {
    const snapshot = (await this.readSnapshot(target, workspaceId)) as unknown as { env: string; policy: { revision_id: string; cedar_text: string; entities: unknown[] } | null };
    const source = snapshot.policy?.cedar_text ?? DEFAULT_POLICY;
    const shared = snapshot.policy?.entities ?? [{ uid: { type: 'Gateway::Workspace', id: workspaceId }, attrs: { env: snapshot.env }, parents: [] }];
    const ids = new Map(splitPolicies(source).map((p) => [p.cedarId, p.id]));
    const emitted: EmittedDecision[] = [];
    const entries: string[] = [];
    for (const request of requests) {
      const answer = isAuthorized({ ...request, context: request.context as never, entities: [...request.entities, ...shared] as never, policies: { staticPolicies: source } });
      if (answer.type !== 'success') throw new Error(`cedar refused the request: ${answer.errors.map((e) => e.message).join('; ')}`);
      const decision = answer.response.decision;
      const authorization = {
        ...request,
        decision,
        policy_revision_id: snapshot.policy?.revision_id ?? null,
        determining_policies: answer.response.diagnostics.reason.map((id) => ids.get(id) ?? id),
      };
      const receiptId = `rcp_${randomBytes(8).toString('hex')}`;
      const isTool = request.resource.type === 'Gateway::Tool';
      const at = occurredAt.toISOString();
      entries.push(
        JSON.stringify({
          workspace_id: workspaceId,
          receipt_id: receiptId,
          invocation_id: `inv_${randomBytes(8).toString('hex')}`,
          receipt_revision: 1,
          tool: isTool ? request.resource.id : null,
          key_id: request.principal.type === 'Gateway::Key' ? request.principal.id : null,
          connection_id: null,
          state: decision === 'allow' ? 'completed' : 'denied',
          decision,
          dispatch_state: decision === 'allow' ? 'accepted' : 'not_attempted',
          evidence_trust: 'gateway_observed',
          verification_state: 'not_required',
          verification_method: 'none',
          effect_claim: null,
          verification_evidence_trust: null,
          vendor_http_status: null,
          upstream_id: null,
          latency_ms: 5,
          usd_micros: 0,
          attempt_count: decision === 'allow' ? 1 : 0,
          occurred_at: at,
          updated_at: at,
          idempotency_key: null,
          request_id: `req_${randomBytes(8).toString('hex')}`,
          policy_id: null,
          policy_revision_id: authorization.policy_revision_id,
          envelope: { authorization },
        }),
      );
      emitted.push({ receipt_id: receiptId, decision, policy_revision_id: authorization.policy_revision_id, determining_policies: authorization.determining_policies });
    }
    await Promise.all(entries.map((data) => target.redis.xAdd(`${target.prefix}:receipts`, '*', { data })));
    return emitted;
  }

  /**
   * Plays an instance applying snapshots as fast as it can: subscribed (with `subscriber`, a
   * connected node-redis client of its own) to `{prefix}:snapshots`, on every announcement it
   * reads the key, verifies the document and reports it applied to control at once. Every
   * report's answer lands in `reports`. Returns the unsubscribe.
   */
  async followSnapshots(source: SnapshotSource & { subscriber: Redis; controlUrl: string }, instanceId: string): Promise<() => Promise<void>> {
    const channel = `${source.prefix}:snapshots`;
    await source.subscriber.subscribe(channel, (message: string) => {
      const workspaceId = message.split(':')[0];
      void this.readSnapshot(source, workspaceId)
        .then((snapshot) => this.reportApplied(source.controlUrl, workspaceId, instanceId, snapshot))
        .catch((error: Error) => this.reports.push({ workspaceId, version: 0, status: 0, body: error.message }));
    });
    return () => source.subscriber.unsubscribe(channel);
  }

  /** The gateway's HTTP fallback (Redis down): `GET` the snapshot from control, verify it, report it applied; the report's answer. */
  async applyFromControl(source: { controlUrl: string; jwks: Jwks }, workspaceId: string, instanceId: string): Promise<AppliedAnswer> {
    const res = await fetch(`${source.controlUrl}/internal/v1/workspaces/${workspaceId}/snapshot`, { headers: { authorization: `Bearer ${await this.controlToken()}` } });
    const snapshot = (await res.json()) as Record<string, unknown>;
    const check = verifySnapshot(snapshot, source.jwks);
    if (!check.ok) throw new Error(`snapshot refused: ${check.reason}`);
    return this.reportApplied(source.controlUrl, workspaceId, instanceId, snapshot);
  }

  private async reportApplied(controlUrl: string, workspaceId: string, instanceId: string, snapshot: Record<string, unknown>): Promise<AppliedAnswer> {
    const version = snapshot.version as number;
    const res = await fetch(`${controlUrl}/internal/v1/workspaces/${workspaceId}/snapshot/applied`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await this.controlToken()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ instance_id: instanceId, version, digest: (snapshot.integrity as { digest: string }).digest, applied_at: new Date().toISOString() }),
    });
    const answer = { workspaceId, version, status: res.status, body: (await res.json()) as unknown };
    this.reports.push(answer);
    return answer;
  }

  /** A gateway-to-control service token (HS256, 60 s, fresh `jti`). */
  private controlToken(): Promise<string> {
    return new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer('gateway').setAudience('control').setIssuedAt().setExpirationTime('60s').setJti(randomUUID()).sign(encoder.encode(this.secret));
  }

  /** The key context a gateway would accept for `secret`, or null. */
  private async resolveKey(source: KeySource, secret: string): Promise<KeyContext | null> {
    const hash = createHash('sha256').update(secret).digest('hex');
    let text: string | null = null;
    try {
      text = await source.redis.get(`${source.prefix}:key:${hash}`);
    } catch {
      // Redis down: control answers.
    }
    if (text === null) {
      const token = await this.controlToken();
      const res = await fetch(`${source.controlUrl}/internal/v1/keys/${hash}`, { headers: { authorization: `Bearer ${token}` } }).catch(() => null);
      if (res?.status !== 200) return null; // control unreachable or the digest unknown: refused
      text = await res.text();
    }
    const context = JSON.parse(text) as KeyContext;
    const now = Date.now();
    const ended = (at: string | null) => at !== null && Date.parse(at) <= now;
    return context.status === 'active' && !ended(context.expires_at) && !ended(context.valid_until) ? context : null;
  }

  private grant() {
    return {
      envelope: this.seal('oauth_access_token', `at_${randomBytes(16).toString('hex')}`),
      refresh_envelope: this.seal('oauth_refresh_token', `rt_${randomBytes(16).toString('hex')}`),
      expires_at: new Date(Date.now() + this.tokenLifetimeS * 1000).toISOString(),
    };
  }

  private async capabilityAccepted(token: unknown): Promise<boolean> {
    if (typeof token !== 'string') return false;
    try {
      await jwtVerify(token, encoder.encode(this.secret), { algorithms: ['HS256'], audience: 'gateway-seal', requiredClaims: ['exp', 'iat', 'jti'] });
      const claims = decodeJwt(token);
      const ok =
        typeof claims.ws === 'string' &&
        typeof claims.conn === 'string' &&
        typeof claims.apd === 'string' &&
        Number.isInteger(claims.rev) &&
        (claims.exp as number) - (claims.iat as number) <= 60 &&
        !this.seenJti.has(claims.jti as string);
      if (ok) this.seenJti.add(claims.jti as string);
      return ok;
    } catch {
      return false;
    }
  }
}
