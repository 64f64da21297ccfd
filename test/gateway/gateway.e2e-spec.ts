import { decodeJwt } from 'jose';
import { loadConfig } from 'src/config/config';
import { GatewayCallError, GatewayClient } from 'src/modules/gateway/gateway.client';
import { GatewayEmulator } from 'test/support/gateway-emulator';

const SERVICE_SECRET = 'test-service-secret-0123456789abcdef';

describe('gateway client against the emulator', () => {
  let gw: GatewayEmulator;
  let client: GatewayClient;
  const seal = { workspaceId: 'ws_1', connectionId: 'conn_1', authProfileDigest: 'sha256:abc', credentialRevision: 2, secretKind: 'api_key' as const, secret: 'rk_live_secret1234' };

  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    client = new GatewayClient(loadConfig({ GATEWAY_URL: gw.url, SERVICE_JWT_SECRET: SERVICE_SECRET }));
  });
  afterEach(() => gw.reset());
  afterAll(() => gw.stop());

  const failure = async (promise: Promise<unknown>): Promise<GatewayCallError> => {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GatewayCallError);
    const e = error as GatewayCallError;
    expect(e.getStatus()).toBe(502);
    expect(e.getResponse()).toEqual({ error: { code: 'upstream_error', message: 'gateway call failed' } });
    return e;
  };

  it('seals under a service JWT and a single-use capability bound to workspace, connection, profile and revision', async () => {
    const sealed = await client.seal(seal);
    expect(sealed).toEqual({ envelope: expect.stringMatching(/^gwenv1\./), key_id: 'gwk_emulator_1', last4: '1234' });
    expect(gw.unseal(sealed.envelope)).toEqual({ kind: 'api_key', secret: seal.secret });
    const [call] = gw.callsTo('/internal/v1/credentials/seal');
    const capability = decodeJwt(call.body.capability as string);
    expect(capability).toMatchObject({ iss: 'control', aud: 'gateway-seal', ws: 'ws_1', conn: 'conn_1', apd: 'sha256:abc', rev: 2 });
    expect((capability.exp as number) - (capability.iat as number)).toBeLessThanOrEqual(60);
    expect(call.body.secret_kind).toBe('api_key');
  });

  it('is refused by a gateway that shares another secret, as an upstream error', async () => {
    const other = new GatewayClient(loadConfig({ GATEWAY_URL: gw.url, SERVICE_JWT_SECRET: 'another-secret-0123456789abcdefghijkl' }));
    const e = await failure(other.seal(seal));
    expect(e.upstreamStatus).toBe(401);
    expect(gw.calls[0].status).toBe(401);
  });

  it('turns a non-2xx answer into 502 upstream_error without the upstream body', async () => {
    gw.fail('/internal/v1/credentials/seal', 500);
    const e = await failure(client.seal(seal));
    expect(JSON.stringify(e.getResponse())).not.toContain('secret-bearing');
    expect(e.permanent).toBe(false);
  });

  it('reports invalid_grant as a permanent refusal', async () => {
    gw.fail('/internal/v1/credentials/refresh', 400, { error: { code: 'invalid_grant' } });
    const e = await failure(client.refresh({ workspace_id: 'ws_1', connection_id: 'conn_1', connector_slug: 'github', refresh_envelope: 'x', credential_revision: 1 }));
    expect(e.upstreamStatus).toBe(400);
    expect(e.upstreamCode).toBe('invalid_grant');
    expect(e.permanent).toBe(true);
  });

  it('gives up on a hanging gateway at the timeout', async () => {
    gw.hang('/internal/v1/oauth/exchange');
    const quick = new GatewayClient(loadConfig({ GATEWAY_URL: gw.url, SERVICE_JWT_SECRET: SERVICE_SECRET }));
    quick.timeoutMs = 200;
    const e = await failure(
      quick.exchange({ workspace_id: 'ws_1', connection_id: 'conn_1', connector_slug: 'github', code: 'c', code_verifier: 'v', redirect_uri: 'http://x/oauth/callback', client_id: 'id', client_secret_envelope: null }),
    );
    expect(e.upstreamStatus).toBeNull();
    expect(gw.calls[0].status).toBe('hung');
  });

  it('fails on a network error and without a configured service secret', async () => {
    const closed = new GatewayClient(loadConfig({ GATEWAY_URL: 'http://127.0.0.1:1', SERVICE_JWT_SECRET: SERVICE_SECRET }));
    expect((await failure(closed.evaluate({ workspace_id: 'ws_1', evidence_id: 'evd_1', receipt_id: null }))).upstreamStatus).toBeNull();
    const unconfigured = new GatewayClient(loadConfig({ GATEWAY_URL: gw.url }));
    await failure(unconfigured.evaluate({ workspace_id: 'ws_1', evidence_id: 'evd_1', receipt_id: null }));
    expect(gw.calls).toHaveLength(0);
  });

  it('exchanges, refreshes with fresh envelopes and evaluates', async () => {
    const grant = await client.exchange({ workspace_id: 'ws_1', connection_id: 'conn_1', connector_slug: 'github', code: 'c', code_verifier: 'v', redirect_uri: 'http://x/oauth/callback', client_id: 'id', client_secret_envelope: null });
    expect(gw.unseal(grant.envelope)?.kind).toBe('oauth_access_token');
    const refreshed = await client.refresh({ workspace_id: 'ws_1', connection_id: 'conn_1', connector_slug: 'github', refresh_envelope: grant.refresh_envelope!, credential_revision: 1 });
    expect(refreshed.envelope).not.toBe(grant.envelope);
    expect(refreshed.refresh_envelope).not.toBe(grant.refresh_envelope);
    await client.evaluate({ workspace_id: 'ws_1', evidence_id: 'evd_1', receipt_id: null });
    expect(gw.calls.map((c) => c.status)).toEqual([200, 200, 202]);
  });
});
