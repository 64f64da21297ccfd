import { randomBytes } from 'node:crypto';
import { signServiceToken } from 'src/platform/auth/service-token';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { dropBrokerReference, freezeWorkspace, restoreBrokerReference } from 'test/support/factories';

const DAY = 24 * 3600 * 1000;
const HOUR = 3600 * 1000;
const iso = (ms: number) => new Date(ms).toISOString();
/** A value that must never come back in an error body. */
const CANARY = 'whsec_CANARY_c2VjcmV0LW1hdGVyaWFs';

describe('webhook subscriptions (/workspaces/{ws}/connections/{connection_id}/webhooks)', () => {
  let gw: GatewayEmulator;
  let t: TestApp;
  let owner: Operator;
  let ws: string;
  /** Native stripe connection, active. */
  let nativeId: string;
  /** Federated github connection on broker_a (pending, with a broker reference). */
  let federatedId: string;
  /** The workspace's broker_a account (a catalog-provider connection). */
  let brokerAccountId: string;

  const base = (connectionId: string, workspaceId = ws) => `/api/v1/workspaces/${workspaceId}/connections/${connectionId}/webhooks`;
  const put = (op: Operator, connectionId: string, subscriptionId: string, body: unknown, workspaceId = ws) =>
    t.http().put(`${base(connectionId, workspaceId)}/${subscriptionId}`).set(bearer(op)).send(body as object);

  /** One entry of the sealed signing-key contract, valid from `fromMs` (relative to now) for `validityMs`. */
  const signingKey = (version: number, fromMs = -HOUR, validityMs = 7 * DAY) => {
    const from = Date.now() + fromMs;
    return { key_version: version, envelope: `gwenv1.${randomBytes(48).toString('base64url')}`, key_id: 'gwk_webhooks_1', last4: `k${version}x9`, valid_from: iso(from), valid_until: iso(from + validityMs) };
  };
  const config = (overrides: Record<string, unknown> = {}): Record<string, unknown> & { signing_keys: ReturnType<typeof signingKey>[]; notification_url?: string } => ({
    signature_profile: 'vendor_a_v1',
    tolerance_seconds: 300,
    signing_keys: [signingKey(1)],
    ...overrides,
  });
  /** A previous key handing over to a current key that became valid an hour ago, overlapping it by 12 hours. */
  const rotation = (previousVersion = 1, currentVersion = 2) => {
    const current = signingKey(currentVersion, -HOUR);
    const from = Date.parse(current.valid_from);
    return [{ ...signingKey(previousVersion), valid_from: iso(from - 5 * DAY), valid_until: iso(from + 12 * HOUR) }, current];
  };
  const sub = () => `wsub_${randomBytes(6).toString('hex')}`;
  const audits = async (action: string, target: string) =>
    t.db.query(`SELECT action, target, detail FROM audit_events WHERE workspace_id = $1 AND action = $2 AND target = $3 ORDER BY occurred_at`, [ws, action, target]);
  const stored = async (subscriptionId: string) =>
    t.db.query(`SELECT * FROM webhook_subscriptions WHERE workspace_id = $1 AND id = $2`, [ws, subscriptionId]);
  const snapshot = async () => {
    const token = await signServiceToken(SERVICE_SECRET, 'gateway', 'control');
    return (await t.http().get(`/internal/v1/workspaces/${ws}/snapshot`).set('Authorization', `Bearer ${token}`).expect(200)).body;
  };

  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url });
    owner = await t.signIn();
    ws = owner.workspaceId;
    const api = (path: string, body: object) => t.http().post(`/api/v1/workspaces/${ws}${path}`).set(bearer(owner)).send(body).expect(200);
    nativeId = (await api('/connections', { slug: 'stripe', source: 'native' })).body.connection.connection_id;
    await api(`/connections/${nativeId}/restricted-key`, { api_key: 'rk_test_51HabcdefWebhooks' });
    brokerAccountId = (await api('/catalog-providers', { provider: 'broker_a', api_key: 'broker-key-abcdef123456' })).body.connection.connection_id;
    federatedId = (await api('/connections', { slug: 'github', source: 'broker_a' })).body.connection.connection_id;
  });
  afterAll(async () => {
    await t.close();
    await gw.stop();
  });

  describe('provisioning', () => {
    it('creates a subscription (201), audits webhook.configure and publishes it in the snapshot', async () => {
      const id = sub();
      const body = config({ notification_url: `https://hooks.example.com/webhooks/${ws}/${nativeId}/${id}` });
      const res = await put(owner, nativeId, id, body);
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        schema_version: 1,
        subscription_id: id,
        workspace_id: ws,
        connection_id: nativeId,
        signature_profile: 'vendor_a_v1',
        trust: 'vendor_signed',
        tolerance_seconds: 300,
        notification_url: body.notification_url,
        signing_keys: [{ key_version: 1, key_id: 'gwk_webhooks_1', last4: 'k1x9', valid_from: body.signing_keys[0].valid_from, valid_until: body.signing_keys[0].valid_until }],
        revision: 1,
        created_at: expect.any(String),
        updated_at: expect.any(String),
        publication: { state: 'published', requested_version: expect.any(Number), published_version: expect.any(Number) },
      });
      expect(JSON.stringify(res.body)).not.toContain(body.signing_keys[0].envelope);
      expect(await audits('webhook.configure', id)).toEqual([
        { action: 'webhook.configure', target: id, detail: { connection_id: nativeId, status: 'created', last4: 'k1x9', snapshot_version: res.body.publication.requested_version } },
      ]);
      const snap = await snapshot();
      expect(snap.version).toBe(res.body.publication.requested_version);
      expect(snap.webhook_subscriptions).toContainEqual({
        subscription_id: id,
        connection_id: nativeId,
        signature_profile: 'vendor_a_v1',
        trust: 'vendor_signed',
        tolerance_seconds: 300,
        notification_url: body.notification_url,
        signing_keys: body.signing_keys,
      });
    });

    it('replaces an existing subscription (200) with the next revision', async () => {
      const id = sub();
      await put(owner, nativeId, id, config()).expect(201);
      const rotated = config({ signature_profile: 'standard_webhooks_v1', tolerance_seconds: 60, signing_keys: rotation() });
      const res = await put(owner, nativeId, id, rotated).expect(200);
      expect(res.body).toMatchObject({ signature_profile: 'standard_webhooks_v1', tolerance_seconds: 60, revision: 2, notification_url: null });
      expect(res.body.signing_keys.map((k: { key_version: number }) => k.key_version)).toEqual([2, 1]);
      expect((await audits('webhook.configure', id)).map((a: { detail: { status: string } }) => a.detail.status)).toEqual(['created', 'replaced']);
    });

    it('lists and reads versions and validity windows, never key material', async () => {
      const id = sub();
      const body = config({ signing_keys: rotation(4, 5) });
      await put(owner, nativeId, id, body).expect(201);
      const viewer = await t.member(owner, 'viewer');
      const list = await t.http().get(base(nativeId)).set(bearer(viewer)).expect(200);
      const one = list.body.subscriptions.find((s: { subscription_id: string }) => s.subscription_id === id);
      expect(one.signing_keys).toEqual([
        { key_version: 5, key_id: 'gwk_webhooks_1', last4: 'k5x9', valid_from: body.signing_keys[1].valid_from, valid_until: body.signing_keys[1].valid_until },
        { key_version: 4, key_id: 'gwk_webhooks_1', last4: 'k4x9', valid_from: body.signing_keys[0].valid_from, valid_until: body.signing_keys[0].valid_until },
      ]);
      const single = await t.http().get(`${base(nativeId)}/${id}`).set(bearer(viewer)).expect(200);
      expect(single.body).toEqual(one);
      for (const text of [JSON.stringify(list.body), JSON.stringify(single.body)]) {
        for (const k of body.signing_keys) expect(text).not.toContain(k.envelope);
        expect(text).not.toContain('envelope');
      }
      expect((await t.http().get(`${base(nativeId)}/wsub_absent`).set(bearer(viewer)).expect(404)).body).toEqual({ detail: 'webhook subscription not found' });
      expect((await t.http().get(base('conn_absent')).set(bearer(viewer)).expect(404)).body).toEqual({ detail: 'connection not found' });
    });

    it('deletes a subscription (204), audits webhook.delete and drops it from the snapshot', async () => {
      const id = sub();
      await put(owner, nativeId, id, config()).expect(201);
      await t.http().delete(`${base(nativeId)}/${id}`).set(bearer(owner)).expect(204);
      expect(await stored(id)).toEqual([]);
      const [audit] = await audits('webhook.delete', id);
      expect(audit).toEqual({ action: 'webhook.delete', target: id, detail: { connection_id: nativeId, snapshot_version: expect.any(Number) } });
      expect((await snapshot()).webhook_subscriptions.map((s: { subscription_id: string }) => s.subscription_id)).not.toContain(id);
      expect((await t.http().delete(`${base(nativeId)}/${id}`).set(bearer(owner)).expect(404)).body).toEqual({ detail: 'webhook subscription not found' });
      expect(await audits('webhook.delete', id)).toHaveLength(1);
    });

    it('publishes only subscriptions of active connections', async () => {
      const id = sub();
      await put(owner, federatedId, id, config({ signature_profile: 'broker_a_sha256' })).expect(201);
      expect((await stored(id))).toHaveLength(1);
      expect((await snapshot()).webhook_subscriptions.map((s: { subscription_id: string }) => s.subscription_id)).not.toContain(id);
    });

    it('concurrent PUTs of a new subscription create it once; each later one is a revision', async () => {
      const id = sub();
      const results = await Promise.all(Array.from({ length: 4 }, () => put(owner, nativeId, id, config())));
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 201]);
      expect(results.map((r) => r.body.revision).sort()).toEqual([1, 2, 3, 4]);
      expect(await stored(id)).toHaveLength(1);
      expect(await audits('webhook.configure', id)).toHaveLength(4);
    });
  });

  describe('profile and connection', () => {
    it('broker profiles need a federated connection on their lane with a broker reference', async () => {
      const ok = await put(owner, federatedId, sub(), config({ signature_profile: 'broker_a_sha256' }));
      expect(ok.status).toBe(201);
      expect(ok.body.trust).toBe('broker_attested');
      for (const [connection, profile] of [
        [nativeId, 'broker_a_sha256'],
        [federatedId, 'broker_b_sha256'],
        [federatedId, 'vendor_a_v1'],
        [federatedId, 'standard_webhooks_v1'],
      ]) {
        const id = sub();
        const res = await put(owner, connection, id, config({ signature_profile: profile }));
        expect(res.status).toBe(409);
        expect(res.body).toEqual({ detail: 'signature profile does not fit the connection' });
        expect(await stored(id)).toEqual([]);
        expect(await audits('webhook.configure', id)).toEqual([]);
      }
    });

    it('a federated connection without its broker reference is refused', async () => {
      await dropBrokerReference(t, federatedId);
      try {
        const res = await put(owner, federatedId, sub(), config({ signature_profile: 'broker_a_sha256' }));
        expect(res.status).toBe(409);
      } finally {
        await restoreBrokerReference(t, federatedId, brokerAccountId);
      }
    });

    it('answers 404 connection not found for an unknown connection, a broker account and another workspace', async () => {
      const other = await t.signIn();
      for (const [op, connection, workspace] of [
        [owner, 'conn_absent', ws],
        [owner, brokerAccountId, ws],
        [other, nativeId, other.workspaceId],
      ] as const) {
        const res = await put(op, connection, sub(), config(), workspace);
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ detail: 'connection not found' });
      }
    });
  });

  describe('key rotation windows', () => {
    const accepts = async (keys: object[]) => expect((await put(owner, nativeId, sub(), config({ signing_keys: keys }))).status).toBe(201);
    const refuses = async (keys: object[], loc: (string | number)[], msg: string) => {
      const id = sub();
      const res = await put(owner, nativeId, id, config({ signing_keys: keys }));
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([{ loc: ['body', 'signing_keys', ...loc], msg, type: 'value_error' }]);
      expect(await stored(id)).toEqual([]);
    };

    it('accepts validity from 1 to 30 days and refuses shorter or longer windows', async () => {
      await accepts([signingKey(1, -HOUR, DAY)]);
      await accepts([signingKey(1, -HOUR, 30 * DAY)]);
      await refuses([signingKey(1, -HOUR, DAY - 1)], [0, 'valid_until'], 'validity must be from 1 to 30 days');
      await refuses([signingKey(1, -HOUR, 30 * DAY + 1)], [0, 'valid_until'], 'validity must be from 1 to 30 days');
    });

    it('refuses a key that has already expired', async () => {
      await refuses([signingKey(1, -3 * DAY, 2 * DAY)], [0, 'valid_until'], 'the key has expired');
    });

    it('accepts a previous key overlapping the current one by up to 24 hours and refuses more', async () => {
      const current = signingKey(2, HOUR);
      const currentFrom = Date.parse(current.valid_from);
      const previous = (overlapMs: number) => ({ ...signingKey(1), valid_from: iso(currentFrom - 5 * DAY), valid_until: iso(currentFrom + overlapMs) });
      await accepts([previous(24 * HOUR), current]);
      await accepts([current, previous(0)]);
      await refuses([previous(24 * HOUR + 1000), current], [0, 'valid_until'], 'the previous key may overlap the current key by at most 24 hours');
      await refuses([current, previous(-1000)], [1, 'valid_until'], 'the previous key must stay valid until the current key becomes valid');
    });

    it('refuses two keys of one version, a newer version valid earlier, and more than two keys', async () => {
      await refuses([signingKey(3), signingKey(3)], [], 'key versions must be distinct');
      await refuses([signingKey(1, -HOUR), signingKey(2, -2 * HOUR)], [1, 'valid_from'], 'the newer key version must become valid after the previous one');
      const res = await put(owner, nativeId, sub(), config({ signing_keys: [signingKey(1, -3 * DAY), signingKey(2, -2 * HOUR), signingKey(3, -HOUR)] }));
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([{ loc: ['body', 'signing_keys'], msg: 'must list the current key and at most one previous key', type: 'list_type' }]);
    });
  });

  describe('closed schema: opaque refusals that never echo the rejected value', () => {
    const refusal = async (body: unknown, subscriptionId = sub()) => {
      const res = await put(owner, nativeId, subscriptionId, body);
      expect(JSON.stringify(res.body)).not.toContain(CANARY);
      expect(JSON.stringify(res.body)).not.toContain('CANARY');
      expect(await stored(subscriptionId)).toEqual([]);
      expect(await audits('webhook.configure', subscriptionId)).toEqual([]);
      return res;
    };
    const locs = (res: { body: { detail: { loc: unknown[] }[] } }) => res.body.detail.map((d) => d.loc);

    it('refuses unknown fields without naming them', async () => {
      const res = await refusal({ ...config(), [CANARY]: CANARY });
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([{ loc: ['body'], msg: 'unknown fields are not permitted', type: 'extra_forbidden' }]);
      const nested = await refusal(config({ signing_keys: [{ ...signingKey(1), secret: CANARY }] }));
      expect(nested.body.detail).toEqual([{ loc: ['body', 'signing_keys', 0], msg: 'unknown fields are not permitted', type: 'extra_forbidden' }]);
    });

    it('refuses each bad field with its location only', async () => {
      const cases: [Record<string, unknown>, (string | number)[]][] = [
        [{ signature_profile: CANARY }, ['body', 'signature_profile']],
        [{ signature_profile: 'vendor_c_v1' }, ['body', 'signature_profile']],
        [{ tolerance_seconds: 0 }, ['body', 'tolerance_seconds']],
        [{ tolerance_seconds: 3601 }, ['body', 'tolerance_seconds']],
        [{ tolerance_seconds: '300' }, ['body', 'tolerance_seconds']],
        [{ tolerance_seconds: 1.5 }, ['body', 'tolerance_seconds']],
        [{ notification_url: `https://hooks.example.com/webhooks/${CANARY}` }, ['body', 'notification_url']],
        [{ notification_url: 'ftp://hooks.example.com/x' }, ['body', 'notification_url']],
        [{ signing_keys: [] }, ['body', 'signing_keys']],
        [{ signing_keys: CANARY }, ['body', 'signing_keys']],
        [{ signing_keys: [CANARY] }, ['body', 'signing_keys', 0]],
        [{ signing_keys: [{ ...signingKey(1), envelope: `${CANARY} with spaces` }] }, ['body', 'signing_keys', 0, 'envelope']],
        [{ signing_keys: [{ ...signingKey(1), envelope: 'short' }] }, ['body', 'signing_keys', 0, 'envelope']],
        [{ signing_keys: [{ ...signingKey(1), last4: CANARY }] }, ['body', 'signing_keys', 0, 'last4']],
        [{ signing_keys: [{ ...signingKey(1), key_id: `${CANARY}/` }] }, ['body', 'signing_keys', 0, 'key_id']],
        [{ signing_keys: [{ ...signingKey(1), key_version: 0 }] }, ['body', 'signing_keys', 0, 'key_version']],
        [{ signing_keys: [{ ...signingKey(1), valid_from: CANARY }] }, ['body', 'signing_keys', 0, 'valid_from']],
      ];
      for (const [overrides, loc] of cases) {
        const res = await refusal(config(overrides));
        expect(res.status).toBe(422);
        expect(locs(res)).toEqual([loc]);
      }
    });

    it('reports every missing field', async () => {
      const res = await refusal({});
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([
        { loc: ['body', 'signature_profile'], msg: 'field required', type: 'missing' },
        { loc: ['body', 'tolerance_seconds'], msg: 'field required', type: 'missing' },
        { loc: ['body', 'signing_keys'], msg: 'field required', type: 'missing' },
      ]);
      const { envelope: _, ...keyWithoutEnvelope } = signingKey(1);
      expect(locs(await refusal(config({ signing_keys: [keyWithoutEnvelope] })))).toEqual([['body', 'signing_keys', 0, 'envelope']]);
    });

    it('pins notification_url to this subscription ingress path: /webhooks or /hooks, no credentials, query or fragment', async () => {
      const id = sub();
      const ok = (url: string) => put(owner, nativeId, id, config({ notification_url: url }));
      expect((await ok(`https://gw.example.com/hooks/${ws}/${nativeId}/${id}`)).status).toBe(201);
      expect((await ok(`http://localhost:8080/webhooks/${ws}/${nativeId}/${id}`)).status).toBe(200);
      for (const url of [
        `https://gw.example.com/webhooks/${ws}/${nativeId}/wsub_other`,
        `https://gw.example.com/webhooks/${ws}/${federatedId}/${id}`,
        `https://user:${CANARY}@gw.example.com/webhooks/${ws}/${nativeId}/${id}`,
        `https://gw.example.com/webhooks/${ws}/${nativeId}/${id}?token=${CANARY}`,
        `https://gw.example.com/webhooks/${ws}/${nativeId}/${id}#${CANARY}`,
        `https://gw.example.com/prefix/webhooks/${ws}/${nativeId}/${id}`,
      ]) {
        const res = await ok(url);
        expect(res.status).toBe(422);
        expect(JSON.stringify(res.body)).not.toContain(CANARY);
      }
    });

    it('refuses a subscription id without the wsub_ prefix', async () => {
      const res = await put(owner, nativeId, 'sub_1', config());
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([expect.objectContaining({ loc: ['path', 'subscription_id'] })]);
    });

    it('refuses a configuration body over 128 KiB with 413, and a body that is not an object with 422', async () => {
      const big = await refusal(config({ signing_keys: [{ ...signingKey(1), envelope: 'a'.repeat(16384) }], padding: 'x'.repeat(128 * 1024) }));
      expect(big.status).toBe(413);
      expect(big.body).toEqual({ detail: 'request body too large' });
      const array = await refusal([config()]);
      expect(array.status).toBe(422);
      expect(array.body.detail).toEqual([{ loc: ['body'], msg: 'must be a JSON object', type: 'model_type' }]);
    });
  });

  describe('authorization', () => {
    const id = 'wsub_authz';
    const routes = () =>
      [
        ['put', `${base(nativeId)}/${id}`, config()],
        ['get', base(nativeId), undefined],
        ['get', `${base(nativeId)}/${id}`, undefined],
        ['delete', `${base(nativeId)}/${id}`, undefined],
      ] as const;
    const call = (method: 'put' | 'get' | 'delete', path: string, body: object | undefined, headers: Record<string, string> = {}) => {
      const req = t.http()[method](path).set(headers);
      return body ? req.send(body) : req;
    };

    beforeAll(async () => {
      await put(owner, nativeId, id, config()).expect((r) => expect([200, 201]).toContain(r.status));
    });

    it('answers 401 without a session', async () => {
      for (const [method, path, body] of routes()) {
        const res = await call(method, path, body);
        expect(res.status).toBe(401);
      }
    });

    it('answers a non-member 404 workspace not found, exactly as for a missing workspace', async () => {
      const stranger = await t.signIn();
      for (const [method, path, body] of routes()) {
        const foreign = await call(method, path, body, bearer(stranger));
        const missing = await call(method, path.replace(ws, 'ws_000000000000000000000000'), body, bearer(stranger));
        expect([foreign.status, foreign.body]).toEqual([404, { detail: 'workspace not found' }]);
        expect([missing.status, missing.body]).toEqual([404, { detail: 'workspace not found' }]);
      }
    });

    it('lets any member read; only admin and owner may configure or delete (403 otherwise)', async () => {
      for (const role of ['viewer', 'developer'] as const) {
        const member = await t.member(owner, role);
        for (const [method, path, body] of routes()) {
          const res = await call(method, path, body, bearer(member));
          if (method === 'get') expect(res.status).toBe(200);
          else expect([res.status, res.body]).toEqual([403, { detail: 'action not permitted' }]);
        }
      }
      const admin = await t.member(owner, 'admin');
      expect((await put(admin, nativeId, id, config())).status).toBe(200);
    });

    it('answers 409 workspace is frozen to mutations and still serves reads', async () => {
      await freezeWorkspace(t, ws);
      try {
        const before = (await stored(id))[0].revision;
        for (const [method, path, body] of routes()) {
          const res = await call(method, path, body, bearer(owner));
          if (method === 'get') expect(res.status).toBe(200);
          else expect([res.status, res.body]).toEqual([409, { detail: 'workspace is frozen' }]);
        }
        expect((await stored(id))[0].revision).toBe(before);
      } finally {
        await freezeWorkspace(t, ws, false);
      }
    });
  });
});
