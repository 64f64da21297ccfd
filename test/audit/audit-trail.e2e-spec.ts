import { createHash, createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canonicalJson } from 'src/common/crypto/crypto';
import { Jwks, publicJwk, signCompactJws, verifyCompactJws } from 'src/common/signing/jws';
import { inTransaction } from 'src/database/transaction';
import { GENESIS_HASH, linkHash, StoredAuditRow, toChainedRow } from 'src/common/crypto/audit-chain';
import { verifyExportFile } from 'src/modules/audit/audit-export-file';
import { describeVerification } from 'src/modules/audit/audit-verifier';
import { AuditCheckpointJob } from 'src/modules/audit/audit-checkpoint.job';
import { AuditTrailService } from 'src/modules/audit/audit-trail.service';
import { AuditService } from 'src/modules/audit/audit.service';
import { expectAccessMatrix, roleMembers } from 'test/support/access-matrix';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { deleteAuditCheckpoints, deleteAuditRow, replaceAuditCheckpoint, setAuditHead, setAuditLink, swapAuditRows, tamperAuditDetail, truncateAuditChain } from 'test/support/factories';

/** Collects a streamed body as text whatever its content type. */
const text = (res: NodeJS.ReadableStream, done: (error: Error | null, body: string) => void) => {
  let body = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => (body += chunk));
  res.on('end', () => done(null, body));
};

describe('tamper-evident audit trail', () => {
  let t: TestApp;
  let owner: Operator;
  let jwks: Jwks;
  const dir = mkdtempSync(join(tmpdir(), 'audit-trail-'));
  const anchor = join(dir, 'anchor.ndjson');
  beforeAll(async () => {
    t = await startTestApp({ AUDIT_ANCHOR_FILE: anchor });
    owner = await t.signIn('trail-owner');
    jwks = (await t.http().get('/.well-known/control-signing-keys.json').expect(200)).body;
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const trail = () => t.app.get(AuditTrailService);
  const exportOf = (op: Operator, query: Record<string, string | number> = {}, ws = op.workspaceId) =>
    t.http().get(`/api/v1/workspaces/${ws}/audit/export`).query(query).set(bearer(op)).buffer(true).parse(text as never);
  const linesOf = (body: string) => body.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
  const rowsOf = (ws: string): Promise<{ seq: string; chain_hash: string; action: string }[]> =>
    t.db.query(`SELECT seq, chain_hash, action FROM audit_events WHERE workspace_id = $1 ORDER BY seq`, [ws]);
  const record = (ws: string, n: number) =>
    inTransaction(t.db, async (tx) => {
      for (let i = 0; i < n; i++) {
        await t.app.get(AuditService).record(tx, { workspaceId: ws, actor: null, action: 'key.revoke', target: `key_${i}`, detail: { reason: `r${i}`, tools_mode: 'all' } });
      }
    });

  describe('signing keys', () => {
    it('publishes the public key as a cacheable JWKS, kid = RFC 7638 thumbprint, with no session', async () => {
      const res = await t.http().get('/.well-known/control-signing-keys.json').expect(200);
      expect(res.headers['cache-control']).toBe('public, max-age=300');
      expect(res.body.keys).toEqual([{ kty: 'OKP', crv: 'Ed25519', x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), kid: expect.any(String), alg: 'EdDSA', use: 'sig' }]);
      const [key] = res.body.keys;
      const thumbprint = createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${key.x}"}`).digest('base64url');
      expect(key.kid).toBe(thumbprint);
      expect(JSON.stringify(res.body)).not.toMatch(/"d"/);
    });

    it('keeps the generated development key in the database and signs with it', async () => {
      expect(await t.db.query(`SELECT kid FROM control_signing_keys`)).toEqual([{ kid: jwks.keys[0].kid }]);
      const [c] = (await trail().checkpoint(owner.workspaceId))!;
      const [{ jws }] = await t.db.query(`SELECT jws FROM audit_checkpoints WHERE workspace_id = $1 AND seq = $2`, [owner.workspaceId, c.seq]);
      expect(verifyCompactJws(jws, jwks)).toEqual({ ok: true, kid: jwks.keys[0].kid, payload: c });
    });

    it('signs, on each pass of the scheduled job, the workspaces whose chain grew since their last checkpoint, once', async () => {
      const op = await t.signIn();
      const job = t.app.get(AuditCheckpointJob);
      await job.tick();
      const kept = () => t.db.query(`SELECT seq, chain_hash FROM audit_checkpoints WHERE workspace_id = $1 ORDER BY seq`, [op.workspaceId]);
      expect(await kept()).toEqual([{ seq: '1', chain_hash: (await rowsOf(op.workspaceId))[0].chain_hash }]);
      await job.tick();
      expect(await kept()).toHaveLength(1);
      await record(op.workspaceId, 2);
      await job.tick();
      expect((await kept()).map((c: { seq: string }) => c.seq)).toEqual(['1', '3']);
    });

    it('publishes the previous key beside the current one during a rotation', async () => {
      const pem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
      const [current, previous] = [pem(), pem()];
      const rotated = await startTestApp({ CONTROL_SIGNING_KEY: current, CONTROL_SIGNING_KEY_PREVIOUS: previous });
      try {
        const res = await rotated.http().get('/.well-known/control-signing-keys.json').expect(200);
        const { createPrivateKey } = await import('node:crypto');
        expect(res.body.keys.map((k: { kid: string }) => k.kid)).toEqual([publicJwk(createPrivateKey(current)).kid, publicJwk(createPrivateKey(previous)).kid]);
        expect(await rotated.db.query(`SELECT kid FROM control_signing_keys`)).toEqual([]);
      } finally {
        await rotated.close();
      }
    });
  });

  describe('chain', () => {
    it('gives 50 concurrent mutations of one workspace seq 1..N without gap or duplicate, and the chain holds', async () => {
      const op = await t.signIn();
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => t.http().post(`/api/v1/workspaces/${op.workspaceId}/keys`).set(bearer(op)).send({ agent_id: `agent-${i}` })),
      );
      expect(results.map((r) => r.status)).toEqual(Array(50).fill(201));
      const rows = await rowsOf(op.workspaceId);
      expect(rows).toHaveLength(51);
      expect(rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: 51 }, (_, i) => i + 1));
      expect(rows.filter((r) => r.action === 'key.mint')).toHaveLength(50);
      expect(await t.db.query(`SELECT seq, chain_hash FROM audit_chain_heads WHERE workspace_id = $1`, [op.workspaceId])).toEqual([{ seq: '51', chain_hash: rows[50].chain_hash }]);
      expect(await trail().check(op.workspaceId)).toMatchObject({ ok: true, rows: 51, lastSeq: 51 });
    });

    it('hashes each row as documented: SHA-256 over the previous link and the canonical JSON of the stored row', async () => {
      const op = await t.signIn();
      await record(op.workspaceId, 1);
      const stored: StoredAuditRow[] = await t.db.query(
        `SELECT id, workspace_id, seq, actor_user_id, actor_email, action, target, detail, occurred_at, chain_hash FROM audit_events WHERE workspace_id = $1 ORDER BY seq`,
        [op.workspaceId],
      );
      const first = toChainedRow(stored[0]);
      expect(first.occurred_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
      const expected = createHash('sha256').update(Buffer.alloc(32)).update(canonicalJson(first)).digest('hex');
      expect(stored[0].chain_hash).toBe(expected);
      expect(stored[1].chain_hash).toBe(linkHash(expected, toChainedRow(stored[1])));
      expect(stored[1].chain_hash).toMatch(/^[0-9a-f]{64}$/);
    });

    it('leaves no link behind a rolled-back act', async () => {
      const op = await t.signIn();
      const before = await rowsOf(op.workspaceId);
      await expect(
        inTransaction(t.db, async (tx) => {
          await t.app.get(AuditService).record(tx, { workspaceId: op.workspaceId, actor: null, action: 'key.revoke', target: 'key_x' });
          throw new Error('the act fails after its audit row');
        }),
      ).rejects.toThrow('the act fails');
      expect(await rowsOf(op.workspaceId)).toEqual(before);
      expect(await t.db.query(`SELECT seq FROM audit_chain_heads WHERE workspace_id = $1`, [op.workspaceId])).toEqual([{ seq: String(before.length) }]);
      await record(op.workspaceId, 1);
      expect((await rowsOf(op.workspaceId)).map((r) => Number(r.seq))).toEqual([1, 2]);
      expect(await trail().check(op.workspaceId)).toMatchObject({ ok: true, rows: 2 });
    });
  });

  describe('export', () => {
    it('streams the trail as NDJSON in seq order with its links, the stored checkpoints, then a fresh checkpoint', async () => {
      const op = await t.signIn();
      await record(op.workspaceId, 3);
      await trail().checkpoint(op.workspaceId);
      await record(op.workspaceId, 1);
      const res = await exportOf(op).expect(200);
      expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
      expect(res.headers['cache-control']).toBe('no-store');
      const lines = linesOf(res.body);
      expect(lines).toHaveLength(5 + 2);
      const rows = lines.slice(0, 5);
      expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(rows[0]).toEqual({
        workspace_id: op.workspaceId,
        seq: 1,
        event_id: expect.stringMatching(/^aud_/),
        actor: { user_id: op.userId, email: op.email },
        action: 'workspace.create',
        target: op.workspaceId,
        detail: { env: 'dev', snapshot_version: 1 },
        occurred_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
        prev_hash: GENESIS_HASH,
        chain_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      // The stored detail keeps its extra keys in the export.
      expect(rows[1].detail).toEqual({ reason: 'r0', tools_mode: 'all' });
      for (let i = 1; i < rows.length; i++) expect(rows[i].prev_hash).toBe(rows[i - 1].chain_hash);
      const checkpoints = lines.slice(5).map((l) => verifyCompactJws(l.checkpoint as string, jwks));
      expect(checkpoints).toEqual([
        { ok: true, kid: jwks.keys[0].kid, payload: { workspace_id: op.workspaceId, seq: 4, chain_hash: rows[3].chain_hash, signed_at: expect.any(String) } },
        { ok: true, kid: jwks.keys[0].kid, payload: { workspace_id: op.workspaceId, seq: 5, chain_hash: rows[4].chain_hash, signed_at: expect.any(String) } },
      ]);
      // The fresh checkpoint is not kept: an export is a read.
      expect(await t.db.query(`SELECT seq FROM audit_checkpoints WHERE workspace_id = $1`, [op.workspaceId])).toEqual([{ seq: '4' }]);
      const file = join(dir, 'whole.ndjson');
      writeFileSync(file, res.body);
      expect(await verifyExportFile(file, jwks)).toMatchObject({ ok: true, rows: 5, firstSeq: 1, lastSeq: 5, checkpoints: 2, signedThrough: 5 });
    });

    it('exports a seq range whose first row links to the row before it', async () => {
      const op = await t.signIn();
      await record(op.workspaceId, 5);
      const all = linesOf((await exportOf(op).expect(200)).body);
      const part = linesOf((await exportOf(op, { from_seq: 3, to_seq: 4 }).expect(200)).body);
      expect(part.slice(0, 2)).toEqual(all.slice(2, 4));
      expect(part).toHaveLength(3);
      const file = join(dir, 'range.ndjson');
      writeFileSync(file, part.map((l) => JSON.stringify(l)).join('\n'));
      expect(await verifyExportFile(file, jwks)).toMatchObject({ ok: true, rows: 2, firstSeq: 3, lastSeq: 4 });
      expect((await exportOf(op, { from_seq: 100 }).expect(200)).body).toBe('');
    });

    it('answers 422 for a bad range', async () => {
      const bad = async (query: Record<string, string | number>, loc: string[], msg?: string) => {
        const res = await exportOf(owner, query).expect(422);
        expect(JSON.parse(res.body).detail).toEqual([expect.objectContaining({ loc, ...(msg ? { msg } : {}), type: expect.any(String) })]);
      };
      await bad({ from_seq: 5, to_seq: 4 }, ['query', 'from_seq'], 'from_seq must not exceed to_seq');
      await bad({ from_seq: 0 }, ['query', 'from_seq']);
      await bad({ to_seq: 'ten' }, ['query', 'to_seq']);
      await bad({ from_seq: 1.5 }, ['query', 'from_seq']);
    });

    it('is reachable as audit.read: 401 without a session, 404 for a non-member, allowed for a viewer and while frozen', async () => {
      const members = await roleMembers(t, owner);
      await expectAccessMatrix(t, owner, members, { method: 'get', path: (ws) => `/api/v1/workspaces/${ws}/audit/export`, minRole: 'viewer', read: true });
      const viewer = await exportOf(members.viewer).expect(200);
      expect(linesOf(viewer.body)[0]).toMatchObject({ seq: 1, action: 'workspace.create' });
    });
  });

  describe('the actor e-mail from the identity provider', () => {
    const refused = async (sub: string, email: string) =>
      t.http().get('/api/v1/me').set(bearer({ token: await t.issuer.token({ sub, email }) })).expect(401, { detail: 'session not accepted' });

    it('refuses, as 401 like any bad token, an e-mail with a lone surrogate or a NUL, writing nothing; the trail verifies afterwards', async () => {
      for (const email of ['lone\ud800@example.com', 'nul\u0000@example.com']) {
        const sub = `bad-email-${Math.random().toString(36).slice(2)}`;
        await refused(sub, email);
        expect(await t.db.query(`SELECT id FROM users WHERE subject = $1`, [sub])).toEqual([]);
      }
      // A known user whose e-mail turns bad is refused too: the stored one, and its chained copies, stay as they were.
      const op = await t.signIn();
      const sub = (await t.db.query(`SELECT subject FROM users WHERE id = $1`, [op.userId]))[0].subject as string;
      for (const email of ['lone\udc00@example.com', 'nul\u0000@example.com']) await refused(sub, email);
      expect(await t.db.query(`SELECT email FROM users WHERE id = $1`, [op.userId])).toEqual([{ email: op.email }]);
      await t.http().post(`/api/v1/workspaces/${op.workspaceId}/keys`).set(bearer(op)).send({ agent_id: 'after' }).expect(201);
      const file = join(dir, `email-${op.workspaceId}.ndjson`);
      writeFileSync(file, (await exportOf(op).expect(200)).body);
      expect(await verifyExportFile(file, jwks)).toMatchObject({ ok: true, rows: 2, signedThrough: 2 });
      expect(await trail().check(op.workspaceId)).toMatchObject({ ok: true, rows: 2 });
    });
  });

  describe('tampering', () => {
    /** A workspace with rows 1..6 and a checkpoint at 6, tampered with in the database, then exported, verified and checked. */
    const caught = async (tamper: (ws: string) => Promise<unknown>) => {
      const op = await t.signIn();
      await record(op.workspaceId, 5);
      await trail().checkpoint(op.workspaceId);
      await tamper(op.workspaceId);
      const file = join(dir, `${op.workspaceId}.ndjson`);
      writeFileSync(file, (await exportOf(op).expect(200)).body);
      return { verify: (await verifyExportFile(file, jwks)).failure, check: (await trail().check(op.workspaceId))!.failure };
    };
    const both = (seq: number, reason: string) => ({ verify: { seq, reason }, check: { seq, reason } });
    const stored = async (ws: string): Promise<StoredAuditRow[]> =>
      t.db.query(`SELECT id, workspace_id, seq, actor_user_id, actor_email, action, target, detail, occurred_at, chain_hash FROM audit_events WHERE workspace_id = $1 ORDER BY seq`, [ws]);
    /** Re-links every stored row of `ws` from genesis, as a forger with the database would; answers the new head hash. */
    const relink = async (ws: string) => {
      let prev = GENESIS_HASH;
      for (const row of await stored(ws)) {
        prev = linkHash(prev, toChainedRow(row));
        await setAuditLink(t, ws, row.seq, prev);
      }
      return prev;
    };

    it('an untouched trail verifies and checks', async () => {
      expect(await caught(() => Promise.resolve())).toEqual({ verify: null, check: null });
    });

    it("catches a row's changed detail as modified", async () => {
      expect(await caught((ws) => tamperAuditDetail(t, ws, 3, { reason: 'nothing happened' }))).toEqual(both(3, 'modified'));
    });

    it('catches a deleted row as missing', async () => {
      expect(await caught((ws) => deleteAuditRow(t, ws, 3))).toEqual(both(3, 'missing'));
      expect(await caught((ws) => deleteAuditRow(t, ws, 1))).toEqual(both(1, 'missing'));
    });

    it("catches two rows' swapped seq as reordered", async () => {
      const swap = (ws: string) => swapAuditRows(t, ws, 3, 4);
      expect(await caught(swap)).toEqual(both(3, 'reordered'));
    });

    it('catches a dropped tail, head rewound with it, as truncated before checkpoint', async () => {
      const drop = (ws: string) => truncateAuditChain(t, ws, 4);
      expect(await caught(drop)).toEqual(both(5, 'truncated before checkpoint'));
    });

    it('catches a rewritten history re-chained and re-signed with a foreign key as a bad signature', async () => {
      const foreign = generateKeyPairSync('ed25519').privateKey;
      const rewrite = async (ws: string) => {
        await tamperAuditDetail(t, ws, 2, { reason: 'nothing happened' });
        const prev = await relink(ws);
        await setAuditHead(t, ws, prev);
        const payload = { workspace_id: ws, seq: 6, chain_hash: prev, signed_at: new Date().toISOString() };
        await replaceAuditCheckpoint(t, ws, 6, prev, signCompactJws(foreign, publicJwk(foreign).kid, payload));
      };
      expect(await caught(rewrite)).toEqual(both(6, 'bad signature'));
    });

    it('catches a re-chained history that still carries the genuine checkpoint as modified at the checkpoint', async () => {
      const rechain = async (ws: string) => {
        await tamperAuditDetail(t, ws, 2, {});
        await relink(ws);
      };
      expect(await caught(rechain)).toEqual(both(6, 'modified'));
    });

    /** An export of a fresh workspace with rows 1..5, a stored checkpoint at `checkpointAt` and the export's fresh one at 5, as lines. */
    const exportedLines = async (checkpointAt = 5) => {
      const op = await t.signIn();
      await record(op.workspaceId, checkpointAt - 1);
      await trail().checkpoint(op.workspaceId);
      await record(op.workspaceId, 5 - checkpointAt);
      const body: string = (await exportOf(op).expect(200)).body;
      return { op, lines: body.trim().split('\n') };
    };
    const verifyText = async (text: string, options: Parameters<typeof verifyExportFile>[2] = {}) => {
      const file = join(dir, `edited-${Math.random().toString(36).slice(2)}.ndjson`);
      writeFileSync(file, text);
      return verifyExportFile(file, jwks, options);
    };
    /** Rows re-chained from `prev` as a forger would, each line's hash over its own (possibly retyped) members. */
    const rechained = (rows: Record<string, unknown>[], prev: string) =>
      rows.map((row) => {
        const { prev_hash: _p, chain_hash: _c, ...fields } = row;
        const chain_hash = linkHash(prev, fields as never);
        const line = JSON.stringify({ ...fields, prev_hash: prev, chain_hash });
        prev = chain_hash;
        return line;
      });

    it('refuses a fully forged export that keeps the genuine checkpoints: seq as a string or a fraction, re-chained, is modified', async () => {
      const { lines } = await exportedLines();
      const rows = lines.slice(0, 5).map((l) => JSON.parse(l) as Record<string, unknown>);
      const checkpoints = lines.slice(5);
      expect(checkpoints).toHaveLength(2);
      const forge = (seqOf: (i: number) => unknown) =>
        [...rechained(rows.map((r, i) => ({ ...r, seq: seqOf(i), target: 'forged', detail: { reason: 'nothing happened' } })), GENESIS_HASH), ...checkpoints].join('\n');
      // "1" + 1 is "11": each forged row meets the seq the old verifier expected, and no row ever met a checkpoint.
      expect((await verifyText(forge((i) => '1'.repeat(i + 1)))).failure).toEqual({ seq: 1, reason: 'modified' });
      expect((await verifyText(forge((i) => i + 1.5))).failure).toEqual({ seq: 1, reason: 'modified' });
    });

    it('refuses a row with a member missing, extra or of another type, and a checkpoint line with more than its checkpoint', async () => {
      const { lines } = await exportedLines();
      const row3 = JSON.parse(lines[2]) as Record<string, unknown>;
      const withRow3 = (edited: Record<string, unknown>) => [lines[0], lines[1], JSON.stringify(edited), ...lines.slice(3)].join('\n');
      const { event_id: _dropped, ...missing } = row3;
      const edits: Record<string, unknown>[] = [
        missing,
        { ...row3, note: 'extra' },
        { ...row3, seq: '3' },
        { ...row3, chain_hash: (row3.chain_hash as string).toUpperCase() },
        { ...row3, actor: { user_id: null } },
        { ...row3, detail: { reason: 1.5 } },
        { ...row3, detail: { reason: { nested: true } } },
        { ...row3, target: 'a\ud800b' },
        { ...row3, occurred_at: '2026-01-01T00:00:00Z' },
      ];
      for (const edited of edits) expect((await verifyText(withRow3(edited))).failure).toEqual({ seq: 3, reason: 'modified' });
      const fresh = JSON.parse(lines[6]) as { checkpoint: string };
      expect((await verifyText([...lines.slice(0, 6), JSON.stringify({ ...fresh, note: 'extra' })].join('\n'))).failure).toEqual({ seq: 0, reason: 'bad signature' });
      expect((await verifyText(lines.join('\n'))).failure).toBeNull();
    });

    it('refuses a checkpoint signed by the genuine key whose header or payload is not exactly as documented', async () => {
      const { op, lines } = await exportedLines();
      const [{ private_key_pem: pem }] = await t.db.query(`SELECT private_key_pem FROM control_signing_keys`);
      const key = createPrivateKey(pem as string);
      const kid = jwks.keys[0].kid;
      const signed = (header: object, payload: object) => {
        const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
        return JSON.stringify({ checkpoint: `${input}.${sign(null, Buffer.from(input), key).toString('base64url')}` });
      };
      const rows = lines.slice(0, 5).map((l) => JSON.parse(l) as { chain_hash: string });
      const genuine = { workspace_id: op.workspaceId, seq: 5, chain_hash: rows[4].chain_hash, signed_at: new Date().toISOString() };
      expect((await verifyText([...lines, signed({ alg: 'EdDSA', kid }, genuine)].join('\n'))).failure).toBeNull();
      const refused: [object, object, number][] = [
        [{ alg: 'EdDSA', kid, crit: ['b64'] }, genuine, 5],
        [{ alg: 'EdDSA', kid }, { ...genuine, note: 'extra' }, 5],
        [{ alg: 'EdDSA', kid }, { ...genuine, seq: '5' }, 0],
        [{ alg: 'EdDSA', kid }, { ...genuine, seq: 4.5 }, 0],
        [{ alg: 'EdDSA', kid }, { ...genuine, chain_hash: genuine.chain_hash.toUpperCase() }, 5],
        [{ alg: 'EdDSA', kid }, { ...genuine, signed_at: 'yesterday' }, 5],
      ];
      for (const [header, payload, seq] of refused) {
        expect((await verifyText([...lines, signed(header, payload)].join('\n'))).failure).toEqual({ seq, reason: 'bad signature' });
      }
    });

    it('refuses an unsigned tail (rows edited and re-chained after the last checkpoint, later checkpoints dropped) unless allowed, then counts it', async () => {
      const { op, lines } = await exportedLines(3);
      expect(lines).toHaveLength(7);
      const rows = lines.slice(0, 5).map((l) => JSON.parse(l) as Record<string, unknown>);
      const tail = rechained([{ ...rows[3], target: 'forged' }, rows[4]], rows[2].chain_hash as string);
      const truncated = [...lines.slice(0, 3), ...tail, lines[5]].join('\n');
      expect((await verifyText(truncated)).failure).toEqual({ seq: 4, reason: 'unsigned tail' });
      const allowed = await verifyText(truncated, { allowUnsignedTail: true });
      expect(allowed).toMatchObject({ ok: true, signedThrough: 3, unvouched: 2 });
      expect(describeVerification(allowed)).toBe(
        `audit trail verified: workspace ${op.workspaceId}, 5 rows (seq 1..5), 1 checkpoints, signed through seq 3, 2 rows unvouched (seq 4..5: no checkpoint covers them)`,
      );
      // A file with no checkpoint at all is unvouched from its first row.
      expect((await verifyText(lines.slice(0, 5).join('\n'))).failure).toEqual({ seq: 1, reason: 'unsigned tail' });
    });

    describe('by someone who can write the database, with the genuine key signing afterwards', () => {
      /** Rows 1..5 checkpointed at 5, and the export an auditor kept then; `rewrite` then works on the database and the checkpoint job signs its head. */
      const rewritten = async (rewrite: (ws: string) => Promise<unknown>) => {
        const op = await t.signIn();
        await record(op.workspaceId, 4);
        await t.app.get(AuditCheckpointJob).tick();
        const earlier = join(dir, `earlier-${op.workspaceId}.ndjson`);
        writeFileSync(earlier, (await exportOf(op).expect(200)).body);
        await rewrite(op.workspaceId);
        await deleteAuditCheckpoints(t, op.workspaceId);
        await t.app.get(AuditCheckpointJob).tick();
        const later = join(dir, `later-${op.workspaceId}.ndjson`);
        writeFileSync(later, (await exportOf(op).expect(200)).body);
        return {
          alone: (await verifyExportFile(later, jwks)).failure,
          withEarlierExport: (await verifyExportFile(later, jwks, { keptCheckpoints: [earlier] })).failure,
          withAnchor: (await verifyExportFile(later, jwks, { keptCheckpoints: [anchor] })).failure,
          checked: (await trail().check(op.workspaceId))!.failure,
        };
      };

      it('re-chained after an edit: verifies for one who holds nothing, modified for one holding an earlier export or the anchor file', async () => {
        const rechain = async (ws: string) => {
          await tamperAuditDetail(t, ws, 2, { reason: 'nothing happened' });
          await setAuditHead(t, ws, await relink(ws));
        };
        expect(await rewritten(rechain)).toEqual({ alone: null, withEarlierExport: { seq: 5, reason: 'modified' }, withAnchor: { seq: 5, reason: 'modified' }, checked: null });
      });

      it('rewound (rows deleted, head moved back): truncated before the kept checkpoint', async () => {
        const rewind = async (ws: string) => {
          await truncateAuditChain(t, ws, 3);
        };
        const truncated = { seq: 4, reason: 'truncated before checkpoint' };
        expect(await rewritten(rewind)).toEqual({ alone: null, withEarlierExport: truncated, withAnchor: truncated, checked: null });
      });

      it('anchors every checkpoint it keeps, of every workspace, as checkpoint lines', async () => {
        const lines = linesOf(readFileSync(anchor, 'utf8'));
        expect(lines.length).toBeGreaterThan(2);
        for (const line of lines) expect(Object.keys(line)).toEqual(['checkpoint']);
        // Every genuine one (a test above replaced one with a foreign signature in the database).
        const kept: { jws: string }[] = (await t.db.query(`SELECT jws FROM audit_checkpoints`)).filter((c: { jws: string }) => verifyCompactJws(c.jws, jwks).ok);
        expect(kept.length).toBeGreaterThan(2);
        const anchored = new Set(lines.map((l) => l.checkpoint));
        for (const { jws } of kept) expect(anchored.has(jws)).toBe(true);
      });
    });

    it('catches edits of the export file itself: lines swapped, a row dropped, a checkpoint forged', async () => {
      const op = await t.signIn();
      await record(op.workspaceId, 5);
      await trail().checkpoint(op.workspaceId);
      const lines = (await exportOf(op).expect(200)).body.trim().split('\n');
      const verifyLines = async (edited: string[]) => {
        const file = join(dir, `edited-${Math.random().toString(36).slice(2)}.ndjson`);
        writeFileSync(file, `${edited.join('\n')}\n`);
        return (await verifyExportFile(file, jwks)).failure;
      };
      expect(await verifyLines(lines)).toBeNull();
      expect(await verifyLines([lines[0], lines[1], lines[3], lines[2], ...lines.slice(4)])).toEqual({ seq: 3, reason: 'reordered' });
      expect(await verifyLines([...lines.slice(0, 5), ...lines.slice(6)])).toEqual({ seq: 6, reason: 'truncated before checkpoint' });
      const forged = JSON.parse(lines[6]) as { checkpoint: string };
      const [h, p, sig] = forged.checkpoint.split('.');
      const payload = { ...JSON.parse(Buffer.from(p, 'base64url').toString()), seq: 9 };
      const tamperedCheckpoint = JSON.stringify({ checkpoint: [h, Buffer.from(JSON.stringify(payload)).toString('base64url'), sig].join('.') });
      expect(await verifyLines([...lines, tamperedCheckpoint])).toEqual({ seq: 9, reason: 'bad signature' });
      const edited = JSON.parse(lines[4]) as { target: string };
      expect(await verifyLines([...lines.slice(0, 4), JSON.stringify({ ...edited, target: 'key_other' }), ...lines.slice(5)])).toEqual({ seq: 5, reason: 'modified' });
    });
  });
});
