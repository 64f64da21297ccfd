import { Validator } from '@cfworker/json-schema';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { signServiceToken } from 'src/platform/auth/service-token';
import { HotPath } from 'src/modules/publication/hot-path';
import { SNAPSHOT_PARTS } from 'src/modules/publication/snapshot.registry';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { GatewayEmulator } from 'test/support/gateway-emulator';

const schema = JSON.parse(readFileSync('src/modules/publication/snapshot.schema.json', 'utf8'));
const HEADER = ['schema_version', 'workspace_id', 'env', 'version', 'generated_at', 'integrity'];

/** Problems as `location: message` lines (empty when the value conforms). */
function problems(value: unknown): string[] {
  const result = new Validator(schema, '2020-12', false).validate(value);
  return result.errors.map((e) => `${e.instanceLocation}: ${e.error}`);
}

describe('src/modules/publication/snapshot.schema.json', () => {
  it('names exactly the header fields and every part the SnapshotRegistry builds', () => {
    expect([...schema.required].sort()).toEqual([...HEADER, ...Object.keys(SNAPSHOT_PARTS)].sort());
    expect(Object.keys(schema.properties).sort()).toEqual([...schema.required].sort());
  });

  describe('against a real built snapshot', () => {
    let gw: GatewayEmulator;
    let t: TestApp;
    let owner: Operator;
    let ws: string;
    const snapshot = async (workspaceId = ws) => {
      const token = await signServiceToken(SERVICE_SECRET, 'gateway', 'control');
      return (await t.http().get(`/internal/v1/workspaces/${workspaceId}/snapshot`).set('Authorization', `Bearer ${token}`).expect(200)).body;
    };

    beforeAll(async () => {
      gw = await GatewayEmulator.start();
      t = await startTestApp({ GATEWAY_URL: gw.url });
      owner = await t.signIn();
      ws = owner.workspaceId;
      const api = (method: 'post' | 'put', path: string, body: object) =>
        t.http()[method](`/api/v1/workspaces/${ws}${path}`).set(bearer(owner)).send(body).expect(200);

      // Every contributor gets something to publish.
      const policy = await t.http().get(`/api/v1/workspaces/${ws}/policy`).set(bearer(owner)).expect(200);
      await api('post', '/policy/publish', { expected_draft_hash: policy.body.draft_hash });
      await api('post', '/approval-policies', {
        name: 'payments',
        rules: [{ rule_id: 'refunds', effect: 'allow', actions: ['tool.call'], tools: ['stripe.*'], environments: ['dev'], approver_roles: ['owner'], approver_user_ids: [], quorum: 1 }],
      });
      const stripe = (await api('post', '/connections', { slug: 'stripe', source: 'native' })).body.connection.connection_id as string;
      await api('post', `/connections/${stripe}/restricted-key`, { api_key: 'rk_test_51HschemaSpec0001' });
      await api('post', '/catalog-providers', { provider: 'broker_a', api_key: 'broker-key-schema-spec-0001' });
      await api('post', '/model-providers', { provider: 'provider_a', api_key: 'sk-schema-spec-0001', model_pattern: 'gpt-*', upstream_model: 'gpt-4o' });
      await api('post', '/route-qualifiers', {
        qualifier_id: 'crm-writes',
        capability_id: 'cap.crm.contact.create',
        constraint: { kind: 'only', targets: ['hubspot.create_contact@native'] },
        prefer_auth: ['oauth2'],
        prefer_sources: ['native'],
        min_quality: 7500,
        max_cost_micros_usd: 2500,
        allow_fallbacks: true,
      });
      await api('post', '/route-qualifiers', { qualifier_id: 'default' });
      const price = { input_micros_usd_per_mtok: 2_500_000, output_micros_usd_per_mtok: 10_000_000, cached_micros_usd_per_mtok: 1_250_000, reasoning_micros_usd_per_mtok: 0 };
      await api('put', '/pricing', { prices: [{ model: 'gpt-4o*', ...price }] });
      const now = Date.now();
      await t.http()
        .put(`/api/v1/workspaces/${ws}/connections/${stripe}/webhooks/wsub_${randomBytes(6).toString('hex')}`)
        .set(bearer(owner))
        .send({
          signature_profile: 'vendor_a_v1',
          tolerance_seconds: 300,
          signing_keys: [
            { key_version: 1, envelope: `gwenv1.${randomBytes(48).toString('base64url')}`, key_id: 'gwk_webhooks_1', last4: 'k1x9', valid_from: new Date(now - 3600_000).toISOString(), valid_until: new Date(now + 86400_000).toISOString() },
          ],
        })
        .expect(201);
    });
    afterAll(async () => {
      await t.close();
      await gw.stop();
    });

    it('the internal route answers a snapshot that conforms, with every part filled', async () => {
      const snap = await snapshot();
      expect(problems(snap)).toEqual([]);
      expect(snap.policy).not.toBeNull();
      expect(snap.pricebook).not.toBeNull();
      expect(snap.approval_rules.rules).toHaveLength(1);
      expect(snap.connections.map((c: { kind: string }) => c.kind).sort()).toEqual(['catalog_provider', 'tool']);
      for (const part of ['models', 'route_qualifiers', 'webhook_subscriptions']) expect(snap[part].length).toBeGreaterThan(0);
    });

    it('the copy on the hot path conforms too', async () => {
      const hotPath = t.app.get(HotPath);
      const published = JSON.parse((await hotPath.get(hotPath.snapshotName(ws))) ?? 'null');
      expect(published).not.toBeNull();
      expect(problems(published)).toEqual([]);
    });

    it("a fresh workspace's snapshot (empty parts) conforms", async () => {
      const other = await t.signIn();
      expect(problems(await snapshot(other.workspaceId))).toEqual([]);
    });

    it('refuses a snapshot with an unknown field, a missing part or a plaintext-looking credential object', async () => {
      const snap = await snapshot();
      expect(problems({ ...snap, extra: true })).not.toEqual([]);
      const { models: _models, ...withoutModels } = snap;
      expect(problems(withoutModels)).not.toEqual([]);
      expect(problems({ ...snap, models: [{ ...snap.models[0], credential: { secret: 'sk-x' } }] })).not.toEqual([]);
    });
  });
});
