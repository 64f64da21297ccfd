import { createClient, RedisClientType } from 'redis';
import { generateKeyPairSync } from 'node:crypto';
import { AddressInfo } from 'node:net';
import { signServiceToken } from 'src/platform/auth/service-token';
import { Jwks } from 'src/common/signing/jws';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { PublicationJob } from 'src/modules/publication/publication.job';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotHistoryService } from 'src/modules/publication/snapshot-history.service';
import { snapshotDigest, verifySnapshot } from 'src/modules/publication/snapshot-integrity';
import { expectAccessMatrix, roleMembers } from 'test/support/access-matrix';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { eventually } from 'test/support/eventually';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { ageInstanceReports, seedAgedSnapshotHistory, stageBareVersion } from 'test/support/factories';

const pem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const RESTRICTED = 'rk_test_51HsnapshotHistory0001';
const ROTATED = 'rk_test_51HsnapshotHistory0002';

describe('signed snapshots, their history and the rollout view', () => {
  let gw: GatewayEmulator;
  let t: TestApp;
  let redis: RedisClientType;
  let owner: Operator;
  let jwks: Jwks;
  const firstKey = pem();

  const held = async (ws: string) => JSON.parse((await redis.get(`${t.config.redisPrefix}:snapshot:${ws}`))!) as Record<string, unknown> & { version: number; integrity: { digest: string; kid: string } };
  const api = (op: Operator, method: 'get' | 'post', path: string, body?: object) => {
    const req = t.http()[method](`/api/v1/workspaces/${op.workspaceId}${path}`).set(bearer(op));
    return body === undefined ? req : req.send(body);
  };
  const applied = async (ws: string, body: object) =>
    t.http().post(`/internal/v1/workspaces/${ws}/snapshot/applied`).set('Authorization', `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}`).send(body);

  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url, CONTROL_SIGNING_KEY: firstKey });
    redis = createClient({ url: REDIS_URL });
    await redis.connect();
    owner = await t.signIn();
    jwks = (await t.http().get('/.well-known/control-signing-keys.json').expect(200)).body;
  });
  afterAll(async () => {
    redis.destroy();
    await t.close();
    await gw.stop();
  });

  describe('integrity', () => {
    it('the emulator applies the published snapshot: its digest and signature verify with the public JWKS', async () => {
      const snapshot = await gw.readSnapshot({ redis, prefix: t.config.redisPrefix, jwks }, owner.workspaceId);
      expect(snapshot).toEqual(await held(owner.workspaceId));
      expect((snapshot.integrity as { kid: string }).kid).toBe(jwks.keys[0].kid);
    });

    it('the emulator refuses a snapshot altered in Redis, whether or not the digest was recomputed', async () => {
      const other = await t.signIn();
      const name = `${t.config.redisPrefix}:snapshot:${other.workspaceId}`;
      const original = await held(other.workspaceId);
      const source = { redis, prefix: t.config.redisPrefix, jwks };
      await redis.set(name, JSON.stringify({ ...original, env: 'prod' }));
      await expect(gw.readSnapshot(source, other.workspaceId)).rejects.toThrow(/^snapshot refused: digest mismatch/);
      const { integrity, ...content } = { ...original, env: 'prod' };
      const forged = { ...content, integrity: { ...integrity, digest: snapshotDigest(content) } };
      await redis.set(name, JSON.stringify(forged));
      await expect(gw.readSnapshot(source, other.workspaceId)).rejects.toThrow(/^snapshot refused: signature does not verify/);
      const { integrity: _dropped, ...unsigned } = original;
      await redis.set(name, JSON.stringify(unsigned));
      await expect(gw.readSnapshot(source, other.workspaceId)).rejects.toThrow('snapshot refused: no integrity member');
      await redis.set(name, JSON.stringify(original));
      await expect(gw.readSnapshot(source, other.workspaceId)).resolves.toEqual(original);
    });

    it('after a key rotation the previous key still verifies old snapshots, and new ones are signed with the new key', async () => {
      const old = await held(owner.workspaceId);
      const rotated = await startTestApp({ CONTROL_SIGNING_KEY: pem(), CONTROL_SIGNING_KEY_PREVIOUS: firstKey });
      try {
        const keys: Jwks = (await rotated.http().get('/.well-known/control-signing-keys.json').expect(200)).body;
        expect(keys.keys.map((k) => k.kid)).toEqual([expect.any(String), jwks.keys[0].kid]);
        expect(verifySnapshot(old, keys)).toEqual({ ok: true, digest: old.integrity.digest, kid: jwks.keys[0].kid });
        const op = await rotated.signIn();
        const fresh = JSON.parse((await redis.get(`${rotated.config.redisPrefix}:snapshot:${op.workspaceId}`))!);
        expect(verifySnapshot(fresh, keys)).toEqual({ ok: true, digest: fresh.integrity.digest, kid: keys.keys[0].kid });
        // Signed by the new key: the old key set alone does not verify it; once the previous key is retired, old snapshots stop verifying.
        expect(verifySnapshot(fresh, jwks)).toMatchObject({ ok: false });
        expect(verifySnapshot(old, { keys: [keys.keys[0]] })).toMatchObject({ ok: false });
      } finally {
        await rotated.close();
      }
    });
  });

  describe('history', () => {
    let op: Operator;
    let stripe: string;
    beforeAll(async () => {
      op = await t.signIn();
      await api(op, 'post', '/route-qualifiers', { qualifier_id: 'default' }).expect(200);
      await t.http().delete(`/api/v1/workspaces/${op.workspaceId}/route-qualifiers/default`).set(bearer(op)).expect(200);
    });

    it('keeps each published version with its digest, size, publish time and cause, newest first, keyset-paged', async () => {
      stripe = (await api(op, 'post', '/connections', { slug: 'stripe', source: 'native' }).expect(200)).body.connection.connection_id;
      await api(op, 'post', `/connections/${stripe}/restricted-key`, { api_key: RESTRICTED }).expect(200);
      const current = await held(op.workspaceId);
      const all = (await api(op, 'get', '/publication/versions').expect(200)).body;
      expect(all.workspace_id).toBe(op.workspaceId);
      expect(all.next_cursor).toBeNull();
      expect(all.versions[0]).toEqual({ version: current.version, digest: current.integrity.digest, size: Buffer.byteLength(JSON.stringify(current)), published_at: expect.any(String), cause: 'connection.credential.store' });
      expect(all.versions[all.versions.length - 1]).toMatchObject({ version: 1, cause: 'workspace.create' });
      expect(all.versions.map((v: { cause: string }) => v.cause)).toContain('route_qualifier.upsert');
      expect(all.versions.map((v: { version: number }) => v.version)).toEqual([...all.versions.map((v: { version: number }) => v.version)].sort((a, b) => b - a));
      const pages: number[] = [];
      let cursor: string | null = null;
      do {
        const page: { versions: { version: number }[]; next_cursor: string | null } = (await api(op, 'get', `/publication/versions?limit=2${cursor ? `&cursor=${cursor}` : ''}`).expect(200)).body;
        expect(page.versions.length).toBeLessThanOrEqual(2);
        pages.push(...page.versions.map((v) => v.version));
        cursor = page.next_cursor;
      } while (cursor);
      expect(pages).toEqual(all.versions.map((v: { version: number }) => v.version));
      expect((await api(op, 'get', '/publication/versions?cursor=nope').expect(422)).body.detail).toEqual([{ loc: ['query', 'cursor'], msg: 'invalid cursor', type: 'value_error' }]);
    });

    it('stores identical content once: a version whose sections equal an earlier one adds no content', async () => {
      const ws = (await t.signIn()).workspaceId;
      const count = async () => (await t.db.query(`SELECT count(*)::int AS n FROM snapshot_contents WHERE workspace_id = $1`, [ws]))[0].n;
      expect(await count()).toBe(1);
      const publications = t.app.get(PublicationService);
      await stageBareVersion(t, ws);
      expect(await publications.publish(ws)).toBe(true);
      expect((await held(ws)).version).toBe(2);
      expect(await count()).toBe(1);
      expect((await t.db.query(`SELECT count(DISTINCT digest)::int AS n FROM snapshot_versions WHERE workspace_id = $1`, [ws]))[0].n).toBe(2);
    });

    it('answers a kept version as its document with every sealed envelope shown only as its hash', async () => {
      const current = await held(op.workspaceId);
      const res = await api(op, 'get', `/publication/versions/${current.version}`).expect(200);
      const envelope = (current.connections as { credential: { envelope: string } }[])[0].credential.envelope;
      expect(res.text).not.toContain(envelope);
      expect(res.body.connections[0].credential.envelope).toMatch(/^sealed:sha256:[0-9a-f]{64}$/);
      expect({ ...res.body, connections: null }).toEqual({ ...current, connections: null });
      for (const missing of ['999', '0', 'x', '01', '2147483648', '9999999999']) expect((await api(op, 'get', `/publication/versions/${missing}`).expect(404)).body).toEqual({ detail: 'snapshot version not found' });
    });

    it('diffs two versions by section, naming changed fields and never showing an envelope', async () => {
      const before = await held(op.workspaceId);
      await api(op, 'post', `/connections/${stripe}/purge-credential`).expect(200);
      await api(op, 'post', `/connections/${stripe}/reconnect`, { api_key: ROTATED }).expect(200);
      const after = await held(op.workspaceId);
      expect(after.version).toBeGreaterThan(before.version);
      const res = await api(op, 'get', `/publication/diff?from=${before.version}&to=${after.version}`).expect(200);
      const envelopes = [before, after].map((s) => (s.connections as { credential: { envelope: string } }[])[0].credential.envelope);
      expect(envelopes[0]).not.toBe(envelopes[1]);
      for (const e of envelopes) expect(res.text).not.toContain(e);
      expect(res.body.from).toEqual({ version: before.version, digest: before.integrity.digest });
      expect(res.body.to).toEqual({ version: after.version, digest: after.integrity.digest });
      expect(res.body.sections.connections.added).toEqual([]);
      expect(res.body.sections.connections.changed).toEqual([{ id: stripe, fields: expect.arrayContaining(['credential', 'credential_revision']) }]);
      const first = (await api(op, 'get', `/publication/diff?from=1&to=${after.version}`).expect(200)).body;
      expect(first.sections.connections).toEqual({ added: [stripe], removed: [], changed: [] });
      const back = (await api(op, 'get', `/publication/diff?from=${after.version}&to=1`).expect(200)).body;
      expect(back.sections.connections).toEqual({ added: [], removed: [stripe], changed: [] });
      expect((await api(op, 'get', `/publication/diff?from=1&to=999`).expect(404)).body).toEqual({ detail: 'snapshot version not found' });
      await api(op, 'get', `/publication/diff?from=1`).expect(422);
      await api(op, 'get', `/publication/diff?from=a&to=1`).expect(422);
    });

    it('retention keeps the newest 100 versions and every version younger than 30 days, in bounded steps', async () => {
      const ws = (await t.signIn()).workspaceId;
      const [{ content_hash: hash }] = await t.db.query(`SELECT content_hash FROM snapshot_versions WHERE workspace_id = $1 AND version = 1`, [ws]);
      // Versions 2-5 are young; 6-130 are 40 days old, 6-30 beyond the newest 100 and with content of their own.
      await seedAgedSnapshotHistory(t, ws, hash);
      const publications = t.app.get(PublicationService);
      const steps = [];
      for (let step = await publications.prune(10); step > 0; step = await publications.prune(10)) steps.push(step);
      expect(steps).toEqual([10, 10, 5]);
      const kept = (await t.db.query(`SELECT version FROM snapshot_versions WHERE workspace_id = $1 ORDER BY version`, [ws])).map((r: { version: number }) => r.version);
      expect(kept).toEqual([1, 2, 3, 4, 5, ...Array.from({ length: 100 }, (_, i) => 31 + i)]);
      expect(await t.db.query(`SELECT content_hash FROM snapshot_contents WHERE workspace_id = $1`, [ws])).toEqual([{ content_hash: hash }]);
    });
  });

  describe('rollout view', () => {
    it('applied reports drive current, behind and stale, and converged', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      const view = async () => (await api(op, 'get', '/publication').expect(200)).body;
      const v1 = await held(ws);
      expect(await view()).toEqual({
        workspace_id: ws,
        snapshot_version: 1,
        published_version: 1,
        digest: v1.integrity.digest,
        published_at: expect.any(String),
        instances: [],
        converged: false,
        converged_at: null,
      });
      const report = (instance: string, s: { version: number; integrity: { digest: string } }) =>
        applied(ws, { instance_id: instance, version: s.version, digest: s.integrity.digest, applied_at: new Date().toISOString() });
      expect((await report('gw-a', v1)).status).toBe(200);
      let seen = await view();
      expect(seen.instances).toEqual([{ instance_id: 'gw-a', version: 1, digest: v1.integrity.digest, applied_at: expect.any(String), state: 'current' }]);
      expect(seen.converged).toBe(true);
      expect(seen.converged_at).toEqual(expect.any(String));

      await api(op, 'post', '/route-qualifiers', { qualifier_id: 'default' }).expect(200);
      const v2 = await held(ws);
      expect(v2.version).toBe(2);
      seen = await view();
      expect(seen).toMatchObject({ snapshot_version: 2, published_version: 2, digest: v2.integrity.digest, converged: false, converged_at: null });
      expect(seen.instances.map((i: { state: string }) => i.state)).toEqual(['behind']);

      expect((await report('gw-b', v2)).body.state).toBe('current');
      seen = await view();
      expect(seen.instances.map((i: { instance_id: string; state: string }) => [i.instance_id, i.state])).toEqual([['gw-a', 'behind'], ['gw-b', 'current']]);
      expect(seen.converged).toBe(false);
      const metrics = t.app.get(MetricsService).registry;
      expect(await metrics.getSingleMetricAsString('control_snapshot_instances_behind')).toMatch(/control_snapshot_instances_behind 1$/m);

      // No report for 10 minutes: stale, and left out of convergence.
      await ageInstanceReports(t, ws, ['gw-a'], '11 minutes');
      seen = await view();
      expect(seen.instances.map((i: { state: string }) => i.state)).toEqual(['stale', 'current']);
      expect(seen.converged).toBe(true);
      expect(await metrics.getSingleMetricAsString('control_snapshot_instances_behind')).toMatch(/control_snapshot_instances_behind 0$/m);

      expect((await report('gw-a', v2)).body.state).toBe('current');
      seen = await view();
      expect(seen.instances.map((i: { state: string }) => i.state)).toEqual(['current', 'current']);
      expect(seen.converged).toBe(true);
      const [row] = await t.db.query(`SELECT converged_at FROM snapshot_versions WHERE workspace_id = $1 AND version = 2`, [ws]);
      expect(row.converged_at).not.toBeNull();
      expect(seen.converged_at).toBe(row.converged_at.toISOString());
      expect(await metrics.getSingleMetricAsString('control_snapshot_convergence_seconds')).toMatch(/control_snapshot_convergence_seconds_count [1-9]/);
    });

    it('an older report arriving late does not move an instance back', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      const v1 = await held(ws);
      await api(op, 'post', '/route-qualifiers', { qualifier_id: 'default' }).expect(200);
      const v2 = await held(ws);
      await applied(ws, { instance_id: 'gw-late', version: 2, digest: v2.integrity.digest, applied_at: '2026-01-02T00:00:00.000Z' });
      const late = await applied(ws, { instance_id: 'gw-late', version: 1, digest: v1.integrity.digest, applied_at: '2026-01-01T00:00:00.000Z' });
      expect(late.body).toEqual({ instance_id: 'gw-late', version: 2, digest: v2.integrity.digest, applied_at: '2026-01-02T00:00:00.000Z', state: 'current' });
    });

    it('refuses an applied_at beyond 60 s ahead (422, nothing written), and orders reports by version, so one skewed clock cannot freeze an instance', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      const v1 = await held(ws);
      const ahead = (ms: number) => new Date(Date.now() + ms).toISOString();
      const future = await applied(ws, { instance_id: 'gw-skewed', version: 1, digest: v1.integrity.digest, applied_at: '2099-01-01T00:00:00.000Z' });
      expect([future.status, future.body]).toEqual([422, { detail: [{ loc: ['body', 'applied_at'], msg: 'applied_at is in the future', type: 'value_error' }] }]);
      expect((await applied(ws, { instance_id: 'gw-skewed', version: 1, digest: v1.integrity.digest, applied_at: ahead(5 * 60_000) })).status).toBe(422);
      expect(await t.db.query(`SELECT count(*)::int AS n FROM snapshot_instances WHERE workspace_id = $1`, [ws])).toEqual([{ n: 0 }]);
      // Within the skew: accepted; a later version applied by the instance's (now corrected) clock an hour "earlier" still moves it on.
      expect((await applied(ws, { instance_id: 'gw-skewed', version: 1, digest: v1.integrity.digest, applied_at: ahead(50_000) })).status).toBe(200);
      await api(op, 'post', '/route-qualifiers', { qualifier_id: 'default' }).expect(200);
      const v2 = await held(ws);
      const earlier = ahead(-3_600_000);
      const next = await applied(ws, { instance_id: 'gw-skewed', version: 2, digest: v2.integrity.digest, applied_at: earlier });
      expect(next.body).toEqual({ instance_id: 'gw-skewed', version: 2, digest: v2.integrity.digest, applied_at: earlier, state: 'current' });
      expect((await api(op, 'get', '/publication').expect(200)).body).toMatchObject({ converged: true, instances: [{ instance_id: 'gw-skewed', version: 2, state: 'current' }] });
    });

    describe('a gateway applying as fast as it can (the emulator)', () => {
      let controlUrl: string;
      let subscriber: RedisClientType;
      let stop: () => Promise<void>;
      beforeAll(async () => {
        await t.app.listen(0, '127.0.0.1');
        controlUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
        subscriber = createClient({ url: REDIS_URL });
        await subscriber.connect();
        stop = await gw.followSnapshots({ redis, subscriber, prefix: t.config.redisPrefix, jwks, controlUrl }, 'gw-fast');
      });
      afterAll(async () => {
        await stop();
        subscriber.destroy();
      });

      it('a report of a version announced before published_version moved is accepted', async () => {
        const op = await t.signIn();
        const ws = op.workspaceId;
        // Stage version 2, and hold the workspace row so the publication's published_version update
        // waits until the emulator has been told, applied and reported (the announcement goes out first).
        await stageBareVersion(t, ws);
        const holder = t.db.createQueryRunner();
        await holder.connect();
        await holder.startTransaction();
        try {
          await holder.query(`SELECT 1 FROM workspaces WHERE id = $1 FOR NO KEY UPDATE`, [ws]);
          const publishing = t.app.get(PublicationService).publish(ws);
          await eventually(async () => expect(gw.reports.filter((r) => r.workspaceId === ws && r.version === 2)).toHaveLength(1), 50, 100);
          expect((await t.db.query(`SELECT published_version FROM workspaces WHERE id = $1`, [ws]))[0].published_version).toBe(1);
          await holder.commitTransaction();
          expect(await publishing).toBe(true);
        } finally {
          if (holder.isTransactionActive) await holder.rollbackTransaction();
          await holder.release();
        }
        const [report] = gw.reports.filter((r) => r.workspaceId === ws && r.version === 2);
        expect(report).toMatchObject({ status: 200, body: { instance_id: 'gw-fast', version: 2, state: 'current' } });
        expect((await api(op, 'get', '/publication').expect(200)).body).toMatchObject({ published_version: 2, converged: true, instances: [{ instance_id: 'gw-fast', version: 2, state: 'current' }] });
      });

      it('with the hot path behind (Redis down at publication), the version the HTTP fallback serves is accepted and shown current', async () => {
        const op = await t.signIn();
        const ws = op.workspaceId;
        // Staged but never written to the hot path: what a publish with Redis down leaves.
        await stageBareVersion(t, ws);
        const answer = await gw.applyFromControl({ controlUrl, jwks }, ws, 'gw-http');
        expect([answer.version, answer.status]).toEqual([2, 200]);
        expect(answer.body).toMatchObject({ instance_id: 'gw-http', version: 2, state: 'current' });
        const view = (await api(op, 'get', '/publication').expect(200)).body;
        expect(view).toMatchObject({ snapshot_version: 2, published_version: 1 });
        expect(view.instances.find((i: { instance_id: string }) => i.instance_id === 'gw-http')).toMatchObject({ version: 2, state: 'current' });
        // Nothing beyond what the route served.
        const beyond = await applied(ws, { instance_id: 'gw-http', version: 3, digest: answer.body && (answer.body as { digest: string }).digest, applied_at: new Date().toISOString() });
        expect([beyond.status, beyond.body]).toEqual([409, { detail: 'version 3 is above the current version 2' }]);
      });
    });

    it('an instance unheard of for 24 hours leaves the view, in bounded steps, and comes back when it reports again', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      const v1 = await held(ws);
      const report = (instance: string) => applied(ws, { instance_id: instance, version: 1, digest: v1.integrity.digest, applied_at: new Date().toISOString() });
      for (const instance of ['gw-1', 'gw-2', 'gw-3', 'gw-4', 'gw-5']) expect((await report(instance)).status).toBe(200);
      await ageInstanceReports(t, ws, ['gw-1', 'gw-2', 'gw-3'], '25 hours');
      await ageInstanceReports(t, ws, ['gw-4'], '23 hours');
      const listed = async () => (await api(op, 'get', '/publication').expect(200)).body.instances.map((i: { instance_id: string; state: string }) => `${i.instance_id} ${i.state}`);
      expect(await listed()).toEqual(['gw-1 stale', 'gw-2 stale', 'gw-3 stale', 'gw-4 stale', 'gw-5 current']);
      expect(await t.app.get(SnapshotHistoryService).forgetInstances(2)).toBe(2);
      await t.app.get(PublicationJob).prune();
      expect(await listed()).toEqual(['gw-4 stale', 'gw-5 current']);
      expect((await report('gw-2')).status).toBe(200);
      expect(await listed()).toEqual(['gw-2 current', 'gw-4 stale', 'gw-5 current']);
    });
  });

  describe('authorization', () => {
    it('every new operator route: viewer and up, 401/404/403, still answered in a frozen workspace', async () => {
      const members = await roleMembers(t, owner);
      for (const path of ['/publication', '/publication/versions', '/publication/versions/1', '/publication/diff?from=1&to=1']) {
        await expectAccessMatrix(t, owner, members, { method: 'get', path: (ws) => `/api/v1/workspaces/${ws}${path}`, minRole: 'viewer', read: true });
      }
    });
  });
});
