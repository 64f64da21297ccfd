import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signServiceToken } from 'src/platform/auth/service-token';
import { Jwks, publicJwk, verifyCompactJws } from 'src/common/signing/jws';
import { verifyExportFile } from 'src/modules/audit/audit-export-file';
import { AuditTrailService } from 'src/modules/audit/audit-trail.service';
import { PublicationService } from 'src/modules/publication/publication.service';
import { verifySnapshot } from 'src/modules/publication/snapshot-integrity';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';

const pem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const kidOf = (key: string) => publicJwk(createPrivateKey(key)).kid;

/**
 * Two rotations of control's signing key, each as docs/runbook.md runs it over several replicas
 * (here one application per step, all on one database and Redis prefix): publish the next key,
 * sign with it, retire the old one. Checkpoints and snapshots are made under every key.
 */
describe('signing key rotation', () => {
  const [keyA, keyB, keyC] = [pem(), pem(), pem()];
  let first: TestApp;
  let unchanged: Operator;
  let busy: Operator;
  const dir = mkdtempSync(join(tmpdir(), 'signing-rotation-'));
  const open: TestApp[] = [];

  beforeAll(async () => {
    first = await startTestApp({ CONTROL_SIGNING_KEY: keyA });
    unchanged = await first.signIn();
    busy = await first.signIn();
  });
  afterAll(async () => {
    for (const app of open) await app.close();
    await first.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Another replica on the same database, Redis prefix and identity issuer, with these keys. */
  const replica = async (keys: { CONTROL_SIGNING_KEY: string; CONTROL_SIGNING_KEY_PREVIOUS?: string; CONTROL_SIGNING_KEY_NEXT?: string }) => {
    const app = await startTestApp({ ...keys, REDIS_PREFIX: first.config.redisPrefix, IDENTITY_ISSUER: first.issuer.url }, { databaseUrl: first.config.databaseUrl });
    open.push(app);
    return app;
  };
  const kids = async (app: TestApp, path: string) => ((await app.http().get(`/.well-known/${path}`).expect(200)).body as Jwks).keys.map((k) => k.kid);
  const snapshotOf = async (app: TestApp, ws: string) => {
    const token = await signServiceToken(SERVICE_SECRET, 'gateway', 'control');
    return (await app.http().get(`/internal/v1/workspaces/${ws}/snapshot`).set('Authorization', `Bearer ${token}`).expect(200)).body as { version: number; integrity: { kid: string } };
  };
  /** A change to `busy`'s workspace made on `app`, then a checkpoint signed there. */
  const changeAndCheckpoint = async (app: TestApp) => {
    await app.http().post(`/api/v1/workspaces/${busy.workspaceId}/keys`).set(bearer(busy)).send({ agent_id: 'rotation' }).expect(201);
    const [signed] = (await app.app.get(AuditTrailService).checkpoint(busy.workspaceId))!;
    const [{ jws }] = await app.db.query(`SELECT jws FROM audit_checkpoints WHERE workspace_id = $1 AND seq = $2`, [busy.workspaceId, signed.seq]);
    return (verifyCompactJws(jws, { keys: (await app.http().get('/.well-known/control-signing-keys.json')).body.keys }) as { kid: string }).kid;
  };
  /** A first page of the busy workspace's audit listing from `app`, and the next page asked of `other` with its cursor. */
  const cursorCrosses = async (app: TestApp, other: TestApp) => {
    const query = { from: '2020-01-01T00:00:00Z', to: new Date(Date.now() + 3_600_000).toISOString(), limit: 1 };
    const page = await app.http().get(`/api/v1/workspaces/${busy.workspaceId}/audit`).query(query).set(bearer(busy)).expect(200);
    expect(page.body.next_cursor).toEqual(expect.any(String));
    await other.http().get(`/api/v1/workspaces/${busy.workspaceId}/audit`).query({ ...query, cursor: page.body.next_cursor }).set(bearer(busy)).expect(200);
  };
  const exported = async (app: TestApp, name: string) => {
    const res = await app
      .http()
      .get(`/api/v1/workspaces/${busy.workspaceId}/audit/export`)
      .set(bearer(busy))
      .buffer(true)
      .parse((r, done) => {
        let body = '';
        r.setEncoding('utf8');
        r.on('data', (chunk: string) => (body += chunk));
        r.on('end', () => done(null, body));
      })
      .expect(200);
    const file = join(dir, name);
    writeFileSync(file, res.body as string);
    return file;
  };

  it('keeps every retired public key, publishes it apart for verification only, and re-signs the snapshots; the untouched trail verifies throughout', async () => {
    expect(await changeAndCheckpoint(first)).toBe(kidOf(keyA));
    const underA = await snapshotOf(first, unchanged.workspaceId);
    expect(underA.integrity.kid).toBe(kidOf(keyA));
    const exportUnderA = await exported(first, 'under-a.ndjson');

    for (const [from, to] of [
      [keyA, keyB],
      [keyB, keyC],
    ]) {
      // 1. Every replica publishes the next key (and accepts its cursors) while still signing with the current one.
      const announcing = await replica({ CONTROL_SIGNING_KEY: from, CONTROL_SIGNING_KEY_NEXT: to });
      expect(await kids(announcing, 'control-signing-keys.json')).toEqual([kidOf(from), kidOf(to)]);
      expect(await announcing.app.get(PublicationService).resignStale()).toBe(0);
      // 2. Replicas restart one by one signing with the next key; those not yet restarted still verify it.
      const signing = await replica({ CONTROL_SIGNING_KEY: to, CONTROL_SIGNING_KEY_PREVIOUS: from });
      expect(await kids(signing, 'control-signing-keys.json')).toEqual([kidOf(to), kidOf(from)]);
      await cursorCrosses(signing, announcing);
      await cursorCrosses(announcing, signing);
      expect(await changeAndCheckpoint(signing)).toBe(kidOf(to));
      // The re-signing pass of a replica not yet restarted leaves the new key's signatures alone; the new replica's re-signs
      // both workspaces' current snapshots (a key mint changes no snapshot), once.
      expect(await announcing.app.get(PublicationService).resignStale()).toBe(0);
      expect(await signing.app.get(PublicationService).resignStale()).toBe(2);
      expect(await signing.app.get(PublicationService).resignStale()).toBe(0);
      const resigned = await snapshotOf(signing, unchanged.workspaceId);
      expect(resigned.integrity.kid).toBe(kidOf(to));
      expect(verifySnapshot(resigned, { keys: (await signing.http().get('/.well-known/control-signing-keys.json')).body.keys })).toMatchObject({ ok: true });
      // 3. The old key is dropped: it is retired, published apart, and still verifies the history.
      const settled = await replica({ CONTROL_SIGNING_KEY: to });
      expect(await kids(settled, 'control-signing-keys.json')).toEqual([kidOf(to)]);
      expect(await kids(settled, 'control-signing-keys-retired.json')).toContain(kidOf(from));
      for (const ws of [busy.workspaceId, unchanged.workspaceId]) expect((await settled.app.get(AuditTrailService).check(ws))!.failure).toBeNull();
    }

    const last = open[open.length - 1];
    const live: Jwks = (await last.http().get('/.well-known/control-signing-keys.json').expect(200)).body;
    const retired = await last.http().get('/.well-known/control-signing-keys-retired.json').expect(200);
    expect(retired.headers['cache-control']).toBe('public, max-age=300');
    expect(retired.body.keys.map((k: { kid: string }) => k.kid)).toEqual([kidOf(keyA), kidOf(keyB)]);
    expect(JSON.stringify(retired.body)).not.toMatch(/"d"/);
    expect(await last.db.query(`SELECT kid FROM control_signing_public_keys ORDER BY first_seen_at`)).toEqual([keyA, keyB, keyC].map((k) => ({ kid: kidOf(k) })));

    // The kept snapshot of a workspace unchanged since the first key is signed by the current key, and a gateway's live key set verifies it.
    const current = await snapshotOf(last, unchanged.workspaceId);
    expect(current.integrity.kid).toBe(kidOf(keyC));
    expect(current.version).toBeGreaterThan(underA.version);
    expect(verifySnapshot(current, live)).toMatchObject({ ok: true, kid: kidOf(keyC) });
    // The snapshot signed under the first key verifies only with the retired set (an archive check), never with the live one.
    expect(verifySnapshot(underA, live)).toMatchObject({ ok: false });
    expect(verifySnapshot(underA, retired.body)).toMatchObject({ ok: true, kid: kidOf(keyA) });

    // The export carries checkpoints under all three keys and the retired set, vouched for by the current key: the live JWKS alone verifies it.
    const file = await exported(last, 'after-two-rotations.ndjson');
    const summary = await verifyExportFile(file, live, { keptCheckpoints: [exportUnderA] });
    expect(summary).toMatchObject({ ok: true, checkpoints: 4, keptCheckpoints: 2 });
    // Without the retired keys the stored checkpoints signed by them would not verify.
    const withoutRetired = join(dir, 'without-retired.ndjson');
    writeFileSync(withoutRetired, readFileSync(file, 'utf8').split('\n').filter((l) => !l.includes('"retired_keys"')).join('\n'));
    expect((await verifyExportFile(withoutRetired, live)).failure).toMatchObject({ reason: 'bad signature' });
    // A retired set signed by anyone else is refused.
    const forged = join(dir, 'forged-retired.ndjson');
    writeFileSync(forged, readFileSync(file, 'utf8').replace(/"retired_keys":"([^"]+)"/, (_, jws: string) => `"retired_keys":"${jws.slice(0, -4)}AAAA"`));
    expect((await verifyExportFile(forged, live)).failure).toEqual({ seq: 0, reason: 'bad signature' });
  }, 180_000);
});
