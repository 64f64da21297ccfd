import { Inject, Injectable, Logger } from '@nestjs/common';
import { signServiceToken } from 'src/platform/auth/service-token';
import { ServiceError } from 'src/common/http/errors';
import { APP_CONFIG, AppConfig } from 'src/config/config';

/** Every gateway call gives up after this long (CONTRACT.md 4.3). */
export const GATEWAY_TIMEOUT_MS = 10_000;
/** Lifetime of a seal capability token (at most 60 s by contract). */
export const SEAL_CAPABILITY_LIFETIME_S = 60;

export type SecretKind = 'api_key' | 'oauth_client_secret' | 'broker_api_key' | 'model_api_key';

/** What a seal is bound to: the gateway checks the capability token against it. */
export interface SealRequest {
  workspaceId: string;
  connectionId: string;
  /** Digest of the connection's auth profile (`apd`). */
  authProfileDigest: string;
  /** The credential revision the connection is at when the secret is sealed (`rev`). */
  credentialRevision: number;
  secretKind: SecretKind;
  secret: string;
}

export interface SealedSecret {
  envelope: string;
  key_id: string;
  last4: string;
}

export interface ExchangeRequest {
  workspace_id: string;
  connection_id: string;
  connector_slug: string;
  code: string;
  code_verifier: string;
  redirect_uri: string;
  client_id: string;
  client_secret_envelope: string | null;
}

export interface ExchangedCredential {
  envelope: string;
  refresh_envelope: string | null;
  expires_at: string | null;
  last4: string | null;
}

export interface RefreshRequest {
  workspace_id: string;
  connection_id: string;
  connector_slug: string;
  refresh_envelope: string;
  credential_revision: number;
}

export interface RefreshedCredential {
  envelope: string;
  refresh_envelope: string | null;
  expires_at: string | null;
}

export interface EvaluateRequest {
  workspace_id: string;
  evidence_id: string;
  receipt_id: string | null;
}

/**
 * A failed gateway call: 502 `{error: {code: "upstream_error"}}` to the operator. `upstreamStatus` (null for
 * a network error or timeout) and `upstreamCode` (the gateway's own error code, e.g. `invalid_grant`)
 * are for callers that decide on them; the upstream body never reaches a response or a log.
 */
export class GatewayCallError extends ServiceError {
  constructor(
    readonly upstreamStatus: number | null,
    readonly upstreamCode: string | null,
  ) {
    super(502, 'upstream_error', 'gateway call failed');
  }

  /** The gateway refused for good (the grant is dead); anything else may succeed later. */
  get permanent(): boolean {
    return this.upstreamCode === 'invalid_grant';
  }
}

/**
 * The HTTP client of the gateway's internal API (CONTRACT.md 4.3). Every request carries a fresh
 * service JWT (`iss` control, `aud` gateway); seals also carry a single-use capability token
 * (`aud` gateway-seal). A network error, a timeout or a non-2xx answer is a GatewayCallError.
 */
@Injectable()
export class GatewayClient {
  private readonly logger = new Logger('gateway');
  /** Per-call timeout; tests shorten it to exercise a hanging gateway quickly. */
  timeoutMs = GATEWAY_TIMEOUT_MS;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async seal(request: SealRequest): Promise<SealedSecret> {
    const capability = await signServiceToken(this.secret(), 'control', 'gateway-seal', SEAL_CAPABILITY_LIFETIME_S, {
      ws: request.workspaceId,
      conn: request.connectionId,
      apd: request.authProfileDigest,
      rev: request.credentialRevision,
    });
    const body = await this.post('/internal/v1/credentials/seal', { capability, secret_kind: request.secretKind, secret: request.secret });
    return { envelope: str(body.envelope), key_id: str(body.key_id), last4: str(body.last4) };
  }

  async exchange(request: ExchangeRequest): Promise<ExchangedCredential> {
    const body = await this.post('/internal/v1/oauth/exchange', request);
    return { envelope: str(body.envelope), refresh_envelope: strOrNull(body.refresh_envelope), expires_at: strOrNull(body.expires_at), last4: strOrNull(body.last4) };
  }

  async refresh(request: RefreshRequest): Promise<RefreshedCredential> {
    const body = await this.post('/internal/v1/credentials/refresh', request);
    return { envelope: str(body.envelope), refresh_envelope: strOrNull(body.refresh_envelope), expires_at: strOrNull(body.expires_at) };
  }

  async evaluate(request: EvaluateRequest): Promise<void> {
    await this.post('/internal/v1/evidence/evaluate', request);
  }

  private secret(): string {
    // Without the shared secret no call can be authenticated: the same failure as an unreachable gateway.
    if (!this.config.serviceJwtSecret) throw new GatewayCallError(null, null);
    return this.config.serviceJwtSecret;
  }

  private async post(path: string, payload: object): Promise<Record<string, unknown>> {
    const token = await signServiceToken(this.secret(), 'control', 'gateway');
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${this.config.gatewayUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      this.logger.warn({ msg: 'gateway call failed', path, reason: error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'network' });
      throw new GatewayCallError(null, null);
    }
    const body = parseObject(text);
    if (!response.ok) {
      const upstreamCode = errorCode(body);
      this.logger.warn({ msg: 'gateway call refused', path, status: response.status, code: upstreamCode });
      throw new GatewayCallError(response.status, upstreamCode);
    }
    if (!body) {
      this.logger.warn({ msg: 'gateway answer unreadable', path, status: response.status });
      throw new GatewayCallError(response.status, null);
    }
    return body;
  }
}

function parseObject(text: string): Record<string, unknown> | null {
  if (text === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The gateway's error code: `{error: {code}}` or `{error: "code"}`; only a short safe token is kept. */
function errorCode(body: Record<string, unknown> | null): string | null {
  const error = body?.error;
  const code = typeof error === 'string' ? error : error !== null && typeof error === 'object' ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^[a-z0-9_.-]{1,64}$/.test(code) ? code : null;
}

function str(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) throw new GatewayCallError(200, null);
  return value;
}

function strOrNull(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return str(value);
}
