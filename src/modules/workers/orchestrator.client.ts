import { Inject, Injectable } from '@nestjs/common';
import { signServiceToken } from 'src/platform/auth/service-token';
import { APP_CONFIG, AppConfig } from 'src/config/config';

export type HandOff = { ok: true; body: Record<string, unknown> } | { ok: false; failure: 'not_configured' | 'unreachable' | 'refused' };

const TIMEOUT_MS = 10_000;
const PROBE_TIMEOUT_MS = 2_000;

/**
 * The client of the worker orchestration service at ORCHESTRATOR_URL: `POST /v1/runs` with the
 * run input, `POST /v1/runs/{id}/{control}` for run controls, `GET /healthz` for the doctor.
 * Calls carry a service JWT (`iss` control, `aud` orchestrator) when SERVICE_JWT_SECRET is set.
 * Every failure is classified, never thrown: callers turn it into a typed refusal.
 */
@Injectable()
export class OrchestratorClient {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  get configured(): boolean {
    return this.config.orchestratorUrl !== undefined;
  }

  async post(path: string, body: unknown): Promise<HandOff> {
    const base = this.config.orchestratorUrl;
    if (!base) return { ok: false, failure: 'not_configured' };
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.config.serviceJwtSecret) headers.authorization = `Bearer ${await signServiceToken(this.config.serviceJwtSecret, 'control', 'orchestrator')}`;
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch {
      return { ok: false, failure: 'unreachable' };
    }
    if (!response.ok) return { ok: false, failure: 'refused' };
    const answer: unknown = await response.json().catch(() => ({}));
    return { ok: true, body: answer !== null && typeof answer === 'object' ? (answer as Record<string, unknown>) : {} };
  }

  /** `ok`, `not_configured`, `unreachable`, or `degraded` (it answered, but not 2xx). */
  async probe(): Promise<'ok' | 'not_configured' | 'unreachable' | 'degraded'> {
    const base = this.config.orchestratorUrl;
    if (!base) return 'not_configured';
    try {
      const response = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      return response.ok ? 'ok' : 'degraded';
    } catch {
      return 'unreachable';
    }
  }
}
