import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { signServiceToken } from 'src/platform/auth/service-token';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { tamperAuditTarget } from 'test/support/factories';

const ROOT = join(__dirname, '..', '..');
/** The environment of a machine that has only the file to verify and control's keys. */
const OFFLINE = { NODE_ENV: 'production' };

/** Runs the operations CLI as `npm run cli` does, against the suite's database. */
function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['-r', require.resolve('ts-node/register/transpile-only'), join(ROOT, 'src/cli.ts'), ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH, NODE_PATH: ROOT, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('operations CLI', () => {
  let t: TestApp;
  let owner: Operator;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.signIn();
    env = { DATABASE_URL: t.config.databaseUrl!, LOG_LEVEL: 'error' };
  });
  afterAll(() => t.close());

  it('freezes and unfreezes a workspace', async () => {
    const frozen = await cli(['workspace:freeze', owner.workspaceId], env);
    expect(frozen).toMatchObject({ code: 0, stdout: `${owner.workspaceId} frozen\n` });
    await t.http().put(`/api/v1/workspaces/${owner.workspaceId}/members/${owner.userId}`).set(bearer(owner)).send({ role: 'owner' }).expect(409, { detail: 'workspace is frozen' });
    expect(await cli(['workspace:unfreeze', owner.workspaceId], env)).toMatchObject({ code: 0 });
    await t.http().put(`/api/v1/workspaces/${owner.workspaceId}/members/${owner.userId}`).set(bearer(owner)).send({ role: 'owner' }).expect(200);
  });

  it('switches the workspace assistant', async () => {
    expect(await cli(['workspace:assistant', owner.workspaceId, 'on'], env)).toMatchObject({ code: 0 });
    expect(await t.db.query(`SELECT assistant_enabled FROM workspaces WHERE id = $1`, [owner.workspaceId])).toEqual([{ assistant_enabled: true }]);
    expect(await cli(['workspace:assistant', owner.workspaceId, 'maybe'], env)).toMatchObject({ code: 1 });
  });

  it('grants organization membership so the user can create workspaces there', async () => {
    const other = await t.signIn();
    await t.http().post('/api/v1/workspaces').set(bearer(other)).send({ org_id: owner.orgId, slug: 'granted' }).expect(403);
    expect(await cli(['org:grant', owner.orgId, other.userId], env)).toMatchObject({ code: 0 });
    await t.http().post('/api/v1/workspaces').set(bearer(other)).send({ org_id: owner.orgId, slug: 'granted' }).expect(201);
  });

  // Four CLI processes, each compiling and booting the application: slow on a loaded machine.
  it('exits non-zero with one line for an unknown workspace, organization or command', async () => {
    const calls = [['workspace:freeze', 'ws_missing'], ['org:grant', 'org_missing', owner.userId], ['nonsense'], []];
    for (const res of await Promise.all(calls.map((args) => cli(args, env)))) {
      expect(res.code).not.toBe(0);
      expect(res.stderr.trim().split('\n')).toHaveLength(1);
    }
  }, 180_000);

  it("sums a month's key months again from the hourly rollups (usage:key-months), and refuses a malformed month", async () => {
    await t.db.query(`INSERT INTO usage_key_months (workspace_id, key_id, month, usd_micros) VALUES ($1, 'key_stray', '2031-05-01T00:00:00Z', 999)`, [owner.workspaceId]);
    const [summed, bad] = await Promise.all([cli(['usage:key-months', '2031-05'], env), cli(['usage:key-months', '2031-13'], env)]);
    expect(summed).toMatchObject({ code: 0, stdout: '0 key months of 2031-05 summed again from the hourly rollups\n' });
    expect(await t.db.query(`SELECT 1 FROM usage_key_months WHERE workspace_id = $1`, [owner.workspaceId])).toEqual([]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^usage: cli </);
  }, 120_000);

  it('runs migrations idempotently', async () => {
    expect(await cli(['migration:run'], env)).toMatchObject({ code: 0, stdout: 'no pending migrations\n' });
  });

  it('prints a development token that the development issuer of a running service accepts', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as { port: number };
        probe.close(() => resolve(free));
      });
    });
    const publicUrl = `http://127.0.0.1:${port}`;
    const dev = await startTestApp({ DEV_IDENTITY: '1', PUBLIC_URL: publicUrl, IDENTITY_ISSUER: `${publicUrl}/dev-identity` });
    try {
      await dev.app.listen(port, '127.0.0.1');
      const res = await cli(['dev:token', '--sub', 'alice', '--email', 'alice@example.com', '--ttl', '120'], { ...env, PUBLIC_URL: publicUrl });
      expect(res.code).toBe(0);
      const token = res.stdout.trim();
      expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'RS256', kid: expect.any(String) });
      const claims = decodeJwt(token);
      expect(claims).toMatchObject({ sub: 'alice', email: 'alice@example.com', iss: `${publicUrl}/dev-identity` });
      expect((claims.exp as number) - (claims.iat as number)).toBe(120);
      const me = await dev.http().get('/api/v1/me').set(bearer({ token })).expect(200);
      expect(me.body.user.email).toBe('alice@example.com');
    } finally {
      await dev.close();
    }
  });

  it('serves no development issuer unless DEV_IDENTITY=1', async () => {
    await t.http().get('/dev-identity/.well-known/jwks.json').expect(404);
  });

  it('refuses the development issuer in production', async () => {
    const res = await cli(['dev:token', '--sub', 'x'], { ...env, DEV_IDENTITY: '1', NODE_ENV: 'production' });
    expect(res.code).toBe(1);
    expect(res.stderr).toBe('invalid configuration: DEV_IDENTITY: the development issuer is refused when NODE_ENV=production\n');
  });

  it('refuses to start in production without a signing key, in one line naming CONTROL_SIGNING_KEY', async () => {
    const res = await cli(['audit:check', owner.workspaceId], { ...env, NODE_ENV: 'production' });
    expect(res).toMatchObject({ code: 1, stderr: 'invalid configuration: CONTROL_SIGNING_KEY: required when NODE_ENV=production (an Ed25519 private key, PKCS#8 PEM)\n' });
  });

  // Each command boots the application in its own process: run them side by side.
  it('signs checkpoints, checks the chain in the database and verifies an export offline, exiting 1 with the first failing seq', async () => {
    const op = await t.signIn();
    await t.http().post(`/api/v1/workspaces/${op.workspaceId}/keys`).set(bearer(op)).send({ agent_id: 'cli' }).expect(201);
    const dir = mkdtempSync(join(tmpdir(), 'cli-audit-'));
    const keys = join(dir, 'keys.json');
    writeFileSync(keys, JSON.stringify((await t.http().get('/.well-known/control-signing-keys.json').expect(200)).body));
    const [signed, missing] = await Promise.all([cli(['audit:checkpoint', op.workspaceId], env), cli(['audit:checkpoint', 'ws_missing'], env)]);
    expect(signed).toMatchObject({ code: 0, stdout: `${op.workspaceId} checkpoint at seq 2\n` });
    expect(missing).toMatchObject({ code: 1, stderr: 'workspace not found: ws_missing\n' });
    const file = join(dir, 'export.ndjson');
    const exported = await t.http().get(`/api/v1/workspaces/${op.workspaceId}/audit/export`).set(bearer(op)).buffer(true).parse((res, done) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => done(null, body));
    });
    writeFileSync(file, exported.body as string);
    // Offline: with --keys, no configuration is read (a production environment without a database or signing key).
    const [verified, checked] = await Promise.all([cli(['audit:verify', file, '--keys', keys], OFFLINE), cli(['audit:check', op.workspaceId], env)]);
    expect(verified).toMatchObject({ code: 0, stdout: `audit trail verified: workspace ${op.workspaceId}, 2 rows (seq 1..2), 2 checkpoints, signed through seq 2\n` });
    expect(checked).toMatchObject({ code: 0, stdout: `audit trail verified: workspace ${op.workspaceId}, 2 rows (seq 1..2), 1 checkpoints, signed through seq 2\n` });

    // The rows without their checkpoints: an unsigned tail, refused unless allowed; vouched for again by checkpoints kept from the whole export.
    const rowsOnly = join(dir, 'rows-only.ndjson');
    writeFileSync(rowsOnly, (exported.body as string).split('\n').filter((l) => !l.includes('"checkpoint"')).join('\n'));
    const [unsigned, allowed, kept] = await Promise.all([
      cli(['audit:verify', rowsOnly, '--keys', keys], OFFLINE),
      cli(['audit:verify', rowsOnly, '--keys', keys, '--allow-unsigned-tail'], OFFLINE),
      cli(['audit:verify', rowsOnly, '--keys', keys, '--keys', keys, '--checkpoints', file], OFFLINE),
    ]);
    expect(unsigned).toMatchObject({ code: 1, stdout: '', stderr: 'audit trail broken at seq 1: unsigned tail\n' });
    expect(allowed).toMatchObject({
      code: 0,
      stdout: `audit trail verified: workspace ${op.workspaceId}, 2 rows (seq 1..2), 0 checkpoints, no checkpoint inside the range, 2 rows unvouched (seq 1..2: no checkpoint covers them)\n`,
    });
    expect(kept).toMatchObject({ code: 0, stdout: `audit trail verified: workspace ${op.workspaceId}, 2 rows (seq 1..2), 0 checkpoints (+2 kept), signed through seq 2\n` });

    await tamperAuditTarget(t, op.workspaceId, 1, 'someone else');
    const lines = (exported.body as string).split('\n');
    writeFileSync(file, [JSON.stringify({ ...JSON.parse(lines[0]), target: 'someone else' }), ...lines.slice(1)].join('\n'));
    const [badFile, badDb] = await Promise.all([cli(['audit:verify', file, '--keys', keys], env), cli(['audit:check', op.workspaceId], env)]);
    expect(badFile).toMatchObject({ code: 1, stdout: '', stderr: 'audit trail broken at seq 1: modified\n' });
    expect(badDb).toMatchObject({ code: 1, stdout: '', stderr: 'audit trail broken at seq 1: modified\n' });
    rmSync(dir, { recursive: true, force: true });
  }, 300_000);

  it('verifies a saved snapshot offline against the JWKS, exiting 1 with the reason for an altered one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cli-snapshot-'));
    const keys = join(dir, 'keys.json');
    writeFileSync(keys, JSON.stringify((await t.http().get('/.well-known/control-signing-keys.json').expect(200)).body));
    const token = await signServiceToken(SERVICE_SECRET, 'gateway', 'control');
    const snapshot = (await t.http().get(`/internal/v1/workspaces/${owner.workspaceId}/snapshot`).set('Authorization', `Bearer ${token}`).expect(200)).body;
    const [good, altered, noKeys] = [join(dir, 'good.json'), join(dir, 'altered.json'), join(dir, 'missing.json')];
    writeFileSync(good, JSON.stringify(snapshot));
    writeFileSync(altered, JSON.stringify({ ...snapshot, env: 'prod' }));
    const [ok, bad, unreadable] = await Promise.all([
      cli(['snapshot:verify', good, '--keys', keys], OFFLINE),
      cli(['snapshot:verify', altered, '--keys', keys], env),
      cli(['snapshot:verify', good, '--keys', noKeys], env),
    ]);
    expect(ok).toMatchObject({ code: 0, stdout: `snapshot verified: workspace ${owner.workspaceId} version ${snapshot.version}, ${snapshot.integrity.digest}, signed by ${snapshot.integrity.kid}\n` });
    expect(bad).toMatchObject({ code: 1, stdout: '' });
    expect(bad.stderr).toMatch(/^snapshot refused: digest mismatch/);
    expect(unreadable.code).toBe(1);
    rmSync(dir, { recursive: true, force: true });
  }, 180_000);
});
