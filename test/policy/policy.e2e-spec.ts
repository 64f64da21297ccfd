import { createHash } from 'node:crypto';
import { DEFAULT_POLICY } from 'src/modules/policy/dto/policy.document';
import { HotPath } from 'src/modules/publication/hot-path';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotUnavailableError } from 'src/modules/publication/snapshot.registry';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { eventually } from 'test/support/eventually';
import { policyWrites } from 'test/support/policy';
import { EntityManager } from 'typeorm';
import { corruptPolicyRevision, createPolicyIn, deletePolicyRevision, freezeWorkspace, losePublicationState, rewritePolicyRevision, storePolicyDraftIn } from 'test/support/factories';

const sha = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
const TOOL_CALL = 'Gateway::Action::"tool.call"';
const VALID = `permit (principal is Gateway::Key, action == ${TOOL_CALL}, resource) when { context.env == "dev" };\n`;
const OTHER_VALID = `forbid (principal, action == ${TOOL_CALL}, resource) when { resource.connector == "stripe" };\n`;
const INVALID = `permit (principal, action == ${TOOL_CALL}, resource)\nwhen { resource.nme == "x" };\n`;

/** A policy of at most `bytes` bytes that compiles cleanly. */
function largePolicy(bytes: number): string {
  const rule = `permit (principal, action == ${TOOL_CALL}, resource) when { context.env == "prod" && resource.name like "*a*" };\n`;
  return rule.repeat(Math.floor(bytes / Buffer.byteLength(rule)));
}

interface Team {
  owner: Operator;
  admin: Operator;
  developer: Operator;
  viewer: Operator;
  ws: string;
}

describe('policy', () => {
  let t: TestApp;
  let outsider: Operator;
  beforeAll(async () => {
    t = await startTestApp();
    outsider = await t.signIn();
  });
  afterAll(() => t.close());

  /** A fresh workspace with one operator per role. */
  const team = async (): Promise<Team> => {
    const owner = await t.signIn();
    const [admin, developer, viewer] = await Promise.all([t.member(owner, 'admin'), t.member(owner, 'developer'), t.member(owner, 'viewer')]);
    return { owner, admin, developer, viewer, ws: owner.workspaceId };
  };
  const path = (ws: string, tail = '') => `/api/v1/workspaces/${ws}/policy${tail}`;
  const get = (op: Operator, ws = op.workspaceId) => t.http().get(path(ws)).set(bearer(op));
  const put = (op: Operator, body: unknown, ws = op.workspaceId) => t.http().put(path(ws)).set(bearer(op)).send(body as object);
  const test = (op: Operator, ws = op.workspaceId) => t.http().post(path(ws, '/test')).set(bearer(op));
  const publish = (op: Operator, body: unknown, ws = op.workspaceId) => t.http().post(path(ws, '/publish')).set(bearer(op)).send(body as object);
  const freeze = (ws: string, frozen = true) => freezeWorkspace(t, ws, frozen);

  const written = (ws: string) => policyWrites(t.db, ws);
  const audits = (ws: string, action: string) =>
    t.db.query(`SELECT actor_user_id, target, detail FROM audit_events WHERE workspace_id = $1 AND action = $2 ORDER BY occurred_at`, [ws, action]);

  /** The authorization matrix every policy route shares. */
  const matrix = (send: (op: Operator, ws: string) => Promise<{ status: number; body: unknown }>, denied: ('viewer' | 'developer')[]) => {
    it('answers 401 without a session', async () => {
      const owner = await t.signIn();
      const anon = await send({ ...owner, token: '' }, owner.workspaceId);
      expect(anon.status).toBe(401);
      expect(anon.body).toEqual({ detail: 'session required' });
    });

    it('answers 404 for a non-member exactly as for a missing workspace', async () => {
      const { ws } = await team();
      const nonMember = await send(outsider, ws);
      const missing = await send(outsider, 'ws_000000000000000000000000');
      expect([nonMember.status, missing.status]).toEqual([404, 404]);
      expect(nonMember.body).toEqual({ detail: 'workspace not found' });
      expect(missing.body).toEqual(nonMember.body);
    });

    if (denied.length > 0) {
      it(`answers 403 for ${denied.join(' and ')}`, async () => {
        const tm = await team();
        const before = await written(tm.ws);
        for (const role of denied) {
          const res = await send(tm[role], tm.ws);
          expect(res.status).toBe(403);
          expect(res.body).toEqual({ detail: 'action not permitted' });
        }
        expect(await written(tm.ws)).toEqual(before);
      });
    }
  };

  describe('GET /policy', () => {
    it('reports the default policy of a workspace with no stored policy, and writes nothing', async () => {
      const tm = await team();
      const before = await written(tm.ws);
      const res = await get(tm.viewer).expect(200);
      expect(res.headers['cache-control']).toBe('no-store');
      const [ws] = await t.db.query(`SELECT created_at FROM workspaces WHERE id = $1`, [tm.ws]);
      expect(res.body).toEqual({
        schema_version: 1,
        policy_id: expect.stringMatching(/^pol_default_[0-9a-f]{24}$/),
        workspace_id: tm.ws,
        cedar_text: DEFAULT_POLICY,
        draft_hash: sha(DEFAULT_POLICY),
        draft_updated_at: ws.created_at.toISOString(),
        validation_state: 'not_run',
        diagnostics: [],
        publication: { state: 'published', requested_version: 1, published_version: 1 },
      });
      expect((await get(tm.owner).expect(200)).body.policy_id).toBe(res.body.policy_id);
      const other = await t.signIn();
      expect((await get(other).expect(200)).body.policy_id).not.toBe(res.body.policy_id);
      expect(await written(tm.ws)).toEqual(before);
    });

    it('stays readable in a frozen workspace', async () => {
      const tm = await team();
      await freeze(tm.ws);
      await get(tm.viewer).expect(200);
    });

    it('answers 500 workspace publication state is unavailable when the workspace has no staged publication', async () => {
      const tm = await team();
      await losePublicationState(t, tm.ws);
      const res = await get(tm.owner).expect(500);
      expect(res.body).toEqual({ detail: 'workspace publication state is unavailable' });
    });

    it('answers the same 500 to draft, test and publish, writing nothing', async () => {
      const tm = await team();
      await losePublicationState(t, tm.ws);
      const before = await written(tm.ws);
      for (const res of [await put(tm.owner, { cedar_text: VALID }), await test(tm.owner), await publish(tm.owner, { expected_draft_hash: sha(DEFAULT_POLICY) })]) {
        expect([res.status, res.body]).toEqual([500, { detail: 'workspace publication state is unavailable' }]);
      }
      expect(await written(tm.ws)).toEqual(before);
    });

    matrix((op, ws) => get(op, ws), []);
  });

  describe('PUT /policy', () => {
    it('stores a draft: new policy id, audit row, no compile, no revision, snapshot untouched', async () => {
      const tm = await team();
      const before = await written(tm.ws);
      const res = await put(tm.developer, { cedar_text: INVALID }).expect(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body).toEqual({
        schema_version: 1,
        policy_id: expect.stringMatching(/^pol_[0-9a-f]{24}$/),
        workspace_id: tm.ws,
        cedar_text: INVALID,
        draft_hash: sha(INVALID),
        draft_updated_at: expect.any(String),
        validation_state: 'not_run',
        diagnostics: [],
        publication: { state: 'published', requested_version: 1, published_version: 1 },
      });
      const [row] = await t.db.query(`SELECT id, cedar_text, draft_hash, draft_updated_at FROM policies WHERE workspace_id = $1`, [tm.ws]);
      expect(row).toEqual({ id: res.body.policy_id, cedar_text: INVALID, draft_hash: sha(INVALID), draft_updated_at: new Date(res.body.draft_updated_at) });
      const after = await written(tm.ws);
      expect({ snapshot_version: after.snapshot_version, revisions: after.revisions, audits: after.audits }).toEqual({
        snapshot_version: before.snapshot_version,
        revisions: 0,
        audits: before.audits + 1,
      });
      expect(await audits(tm.ws, 'policy.draft.store')).toEqual([{ actor_user_id: tm.developer.userId, target: res.body.policy_id, detail: { policy_id: res.body.policy_id } }]);
      expect((await get(tm.viewer).expect(200)).body).toEqual(res.body);

      const again = await put(tm.owner, { cedar_text: VALID }).expect(200);
      expect(again.body.policy_id).toBe(res.body.policy_id);
      expect(again.body.draft_hash).toBe(sha(VALID));
      expect(new Date(again.body.draft_updated_at).getTime()).toBeGreaterThanOrEqual(new Date(res.body.draft_updated_at).getTime());
    });

    it('accepts a 262144-byte policy and refuses 262145 bytes, counting UTF-8 bytes', async () => {
      const tm = await team();
      const max = `//${'é'.repeat(131071)}`; // 2 + 2 * 131071 = 262144 bytes
      expect(Buffer.byteLength(max)).toBe(262144);
      expect((await put(tm.developer, { cedar_text: max }).expect(200)).body.draft_hash).toBe(sha(max));
      const before = await written(tm.ws);
      const res = await put(tm.developer, { cedar_text: `${max}x` }).expect(422);
      expect(res.body).toEqual({ detail: [{ loc: ['body', 'cedar_text'], msg: 'cedar_text must be at most 262144 bytes', type: 'string_too_long' }] });
      expect(await written(tm.ws)).toEqual(before);
    });

    it('refuses a missing, empty, non-string or oversize source and unexpected fields with 422, writing nothing', async () => {
      const tm = await team();
      const before = await written(tm.ws);
      const cases: [unknown, object][] = [
        [{}, { loc: ['body', 'cedar_text'], msg: 'field required', type: 'missing' }],
        [{ cedar_text: '' }, { loc: ['body', 'cedar_text'], msg: 'cedar_text must not be empty', type: 'string_too_short' }],
        [{ cedar_text: 42 }, expect.objectContaining({ loc: ['body', 'cedar_text'] })],
        [{ cedar_text: VALID, expected_draft_hash: sha(VALID) }, { loc: ['body', 'expected_draft_hash'], msg: 'extra fields not permitted', type: 'extra_forbidden' }],
      ];
      for (const [body, entry] of cases) {
        const res = await put(tm.developer, body).expect(422);
        expect(res.body).toEqual({ detail: [entry] });
      }
      expect(await written(tm.ws)).toEqual(before);
    });

    it('answers 409 in a frozen workspace and writes nothing', async () => {
      const tm = await team();
      await freeze(tm.ws);
      const before = await written(tm.ws);
      const res = await put(tm.developer, { cedar_text: VALID }).expect(409);
      expect(res.body).toEqual({ detail: 'workspace is frozen' });
      expect(await written(tm.ws)).toEqual(before);
    });

    matrix((op, ws) => put(op, { cedar_text: VALID }, ws), ['viewer']);
  });

  describe('POST /policy/test', () => {
    it('compiles the default policy as valid and writes nothing', async () => {
      const tm = await team();
      const before = await written(tm.ws);
      const res = await test(tm.developer).expect(200);
      expect(res.body).toEqual({ ...(await get(tm.owner)).body, validation_state: 'valid', diagnostics: [] });
      expect(await written(tm.ws)).toEqual(before);
    });

    it('answers 200 for an invalid draft with line and column diagnostics, and writes nothing', async () => {
      const tm = await team();
      await put(tm.developer, { cedar_text: INVALID }).expect(200);
      const before = await written(tm.ws);
      const res = await test(tm.developer).expect(200);
      expect(res.body.validation_state).toBe('invalid');
      expect(res.body.cedar_text).toBe(INVALID);
      expect(res.body.diagnostics).toEqual([
        { severity: 'error', code: 'validation_error', message: expect.stringContaining('`nme`'), line: 2, column: 8 },
      ]);
      expect(await written(tm.ws)).toEqual(before);
      // a plain read never reports the outcome of a test
      expect((await get(tm.developer).expect(200)).body).toMatchObject({ validation_state: 'not_run', diagnostics: [] });
    });

    it('reports a syntax error as a parse_error diagnostic', async () => {
      const tm = await team();
      await put(tm.developer, { cedar_text: 'permit (principal, action, resource)\nwhen { true' }).expect(200);
      const res = await test(tm.developer).expect(200);
      expect(res.body.validation_state).toBe('invalid');
      expect(res.body.diagnostics).toEqual([expect.objectContaining({ severity: 'error', code: 'parse_error', line: 2, column: 12 })]);
    });

    it('keeps warnings without making the draft invalid', async () => {
      const tm = await team();
      await put(tm.developer, { cedar_text: 'permit (principal, action, resource) when { false };' }).expect(200);
      const res = await test(tm.developer).expect(200);
      expect(res.body.validation_state).toBe('valid');
      expect(res.body.diagnostics).toEqual([expect.objectContaining({ severity: 'warning', code: 'validation_warning', line: 1, column: 1 })]);
    });

    it('answers 409 in a frozen workspace even though it writes nothing', async () => {
      const tm = await team();
      await freeze(tm.ws);
      const res = await test(tm.developer).expect(409);
      expect(res.body).toEqual({ detail: 'workspace is frozen' });
    });

    matrix((op, ws) => test(op, ws), ['viewer']);
  });

  describe('POST /policy/publish', () => {
    it('publishes the default policy: revision, snapshot, audit, overview and a valid plain read', async () => {
      const tm = await team();
      const draft = (await get(tm.admin).expect(200)).body;
      const res = await publish(tm.admin, { expected_draft_hash: draft.draft_hash }).expect(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body).toEqual({
        schema_version: 1,
        policy_id: expect.stringMatching(/^pol_[0-9a-f]{24}$/),
        revision_id: expect.stringMatching(/^rev_[0-9a-f]{24}$/),
        draft_hash: sha(DEFAULT_POLICY),
        published_at: expect.any(String),
        publication: { state: 'published', requested_version: 2, published_version: 2 },
      });
      const [revision] = await t.db.query(`SELECT policy_id, cedar_text, draft_hash, bundle_hash, entities, published_by, published_at FROM policy_revisions WHERE id = $1 AND workspace_id = $2`, [
        res.body.revision_id,
        tm.ws,
      ]);
      const entities = [{ uid: { type: 'Gateway::Workspace', id: tm.ws }, attrs: { env: 'dev' }, parents: [] }];
      expect(revision).toEqual({
        policy_id: res.body.policy_id,
        cedar_text: DEFAULT_POLICY,
        draft_hash: sha(DEFAULT_POLICY),
        bundle_hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
        entities,
        published_by: tm.admin.userId,
        published_at: new Date(res.body.published_at),
      });
      expect(revision.bundle_hash).not.toBe(revision.draft_hash);
      expect(await audits(tm.ws, 'policy.publish')).toEqual([
        {
          actor_user_id: tm.admin.userId,
          target: res.body.policy_id,
          detail: { policy_id: res.body.policy_id, revision_id: res.body.revision_id, bundle_hash: revision.bundle_hash, snapshot_version: 2 },
        },
      ]);

      const doc = (await get(tm.viewer).expect(200)).body;
      expect(doc).toEqual({
        ...draft,
        policy_id: res.body.policy_id,
        validation_state: 'valid',
        publication: res.body.publication,
        current_revision_id: res.body.revision_id,
        published_at: res.body.published_at,
        published_hash: revision.bundle_hash,
      });

      const overview = await t.http().get(`/api/v1/workspaces/${tm.ws}/overview`).set(bearer(tm.viewer)).expect(200);
      expect(overview.body.policy).toEqual({ published: true, revision_id: res.body.revision_id, published_at: res.body.published_at, bundle_hash: revision.bundle_hash });

      const hotPath = t.app.get(HotPath);
      const snapshot = JSON.parse((await hotPath.get(hotPath.snapshotName(tm.ws)))!);
      expect(snapshot.version).toBe(2);
      expect(snapshot.policy).toEqual({ revision_id: res.body.revision_id, bundle_hash: revision.bundle_hash, cedar_text: DEFAULT_POLICY, entities });
    });

    it('publishes a stored draft after a first revision; revisions stay; a reverted draft reads valid again', async () => {
      const tm = await team();
      await put(tm.developer, { cedar_text: VALID }).expect(200);
      const first = await publish(tm.owner, { expected_draft_hash: sha(VALID), expected_revision_id: null }).expect(200);
      await put(tm.developer, { cedar_text: OTHER_VALID }).expect(200);
      expect((await get(tm.viewer)).body).toMatchObject({ validation_state: 'not_run', current_revision_id: first.body.revision_id });
      const second = await publish(tm.admin, { expected_draft_hash: sha(OTHER_VALID), expected_revision_id: first.body.revision_id }).expect(200);
      expect(second.body).toMatchObject({ policy_id: first.body.policy_id, draft_hash: sha(OTHER_VALID), publication: { state: 'published', requested_version: 3 } });
      const revisions = await t.db.query(`SELECT id, cedar_text FROM policy_revisions WHERE workspace_id = $1 ORDER BY published_at`, [tm.ws]);
      expect(revisions).toEqual([
        { id: first.body.revision_id, cedar_text: VALID },
        { id: second.body.revision_id, cedar_text: OTHER_VALID },
      ]);
      await put(tm.developer, { cedar_text: VALID }).expect(200);
      expect((await get(tm.viewer)).body).toMatchObject({ validation_state: 'valid', current_revision_id: second.body.revision_id });
    });

    it('keeps revisions immutable in the database', async () => {
      const tm = await team();
      const res = await publish(tm.admin, { expected_draft_hash: sha(DEFAULT_POLICY) }).expect(200);
      await expect(rewritePolicyRevision(t, res.body.revision_id, 'x')).rejects.toThrow('policy revisions are immutable');
      await expect(deletePolicyRevision(t, res.body.revision_id)).rejects.toThrow('policy revisions are immutable');
    });

    it('answers 409 policy draft changed when the draft no longer hashes to expected_draft_hash, writing nothing', async () => {
      const tm = await team();
      await put(tm.developer, { cedar_text: VALID }).expect(200);
      const before = await written(tm.ws);
      const res = await publish(tm.admin, { expected_draft_hash: sha(DEFAULT_POLICY) }).expect(409);
      expect(res.body).toEqual({ detail: 'policy draft changed' });
      expect(await written(tm.ws)).toEqual(before);
    });

    it('answers 409 policy revision changed for a stale or missing expected_revision_id, writing nothing', async () => {
      const tm = await team();
      const first = await publish(tm.admin, { expected_draft_hash: sha(DEFAULT_POLICY) }).expect(200);
      const before = await written(tm.ws);
      for (const expected of [undefined, null, 'rev_000000000000000000000000']) {
        const res = await publish(tm.admin, { expected_draft_hash: sha(DEFAULT_POLICY), expected_revision_id: expected }).expect(409);
        expect(res.body).toEqual({ detail: 'policy revision changed' });
      }
      const beforeFirst = await team();
      const res = await publish(beforeFirst.admin, { expected_draft_hash: sha(DEFAULT_POLICY), expected_revision_id: first.body.revision_id }).expect(409);
      expect(res.body).toEqual({ detail: 'policy revision changed' });
      expect(await written(tm.ws)).toEqual(before);
    });

    it('answers 422 with the policy document and its diagnostics for a draft that does not compile, writing nothing', async () => {
      const tm = await team();
      await put(tm.developer, { cedar_text: INVALID }).expect(200);
      const draft = (await get(tm.admin)).body;
      const before = await written(tm.ws);
      const res = await publish(tm.admin, { expected_draft_hash: sha(INVALID) }).expect(422);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body).toEqual({
        ...draft,
        validation_state: 'invalid',
        diagnostics: [{ severity: 'error', code: 'validation_error', message: expect.stringContaining('`nme`'), line: 2, column: 8 }],
      });
      expect(await written(tm.ws)).toEqual(before);
    });

    it('answers 422 for a bad or missing expected_draft_hash or an extra field (a policy source is not accepted)', async () => {
      const tm = await team();
      const before = await written(tm.ws);
      const cases: [unknown, string, string][] = [
        [{}, 'expected_draft_hash', 'missing'],
        [{ expected_draft_hash: 'sha256:abc' }, 'expected_draft_hash', 'string_pattern_mismatch'],
        [{ expected_draft_hash: sha(DEFAULT_POLICY).toUpperCase() }, 'expected_draft_hash', 'string_pattern_mismatch'],
        [{ expected_draft_hash: sha(DEFAULT_POLICY).slice(7) }, 'expected_draft_hash', 'string_pattern_mismatch'],
        [{ expected_draft_hash: 7 }, 'expected_draft_hash', expect.any(String)],
        [{ expected_draft_hash: sha(DEFAULT_POLICY), cedar_text: VALID }, 'cedar_text', 'extra_forbidden'],
        [{ expected_draft_hash: sha(DEFAULT_POLICY), expected_revision_id: 5 }, 'expected_revision_id', expect.any(String)],
      ];
      for (const [body, field, type] of cases) {
        const res = await publish(tm.admin, body).expect(422);
        expect(res.body).toEqual({ detail: [{ loc: ['body', field], msg: expect.any(String), type }] });
      }
      expect(await written(tm.ws)).toEqual(before);
    });

    it('lets a developer draft and test but not publish', async () => {
      const tm = await team();
      await put(tm.developer, { cedar_text: VALID }).expect(200);
      await test(tm.developer).expect(200);
      const res = await publish(tm.developer, { expected_draft_hash: sha(VALID) }).expect(403);
      expect(res.body).toEqual({ detail: 'action not permitted' });
      expect((await written(tm.ws)).revisions).toBe(0);
    });

    it('answers 409 in a frozen workspace and writes nothing', async () => {
      const tm = await team();
      await freeze(tm.ws);
      const before = await written(tm.ws);
      const res = await publish(tm.admin, { expected_draft_hash: sha(DEFAULT_POLICY) }).expect(409);
      expect(res.body).toEqual({ detail: 'workspace is frozen' });
      expect(await written(tm.ws)).toEqual(before);
    });

    matrix((op, ws) => publish(op, { expected_draft_hash: sha(DEFAULT_POLICY) }, ws), ['viewer', 'developer']);

    it('gives exactly one 200 when two publishes race with the same expected hash', async () => {
      const tm = await team();
      await put(tm.developer, { cedar_text: VALID }).expect(200);
      const results = await Promise.all([tm.admin, tm.owner].map((op) => publish(op, { expected_draft_hash: sha(VALID) })));
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
      expect(results.find((r) => r.status === 409)!.body).toEqual({ detail: 'policy revision changed' });
      const after = await written(tm.ws);
      expect(after.revisions).toBe(1);
      expect(await audits(tm.ws, 'policy.publish')).toHaveLength(1);
    });

    /**
     * Holds the workspace row lock from a second connection, sends the publish, waits until it is
     * blocked in phase 3 (so phases 1 and 2 are done), then runs `change` in the lock holder's
     * transaction and commits: the publish re-checks against what committed meanwhile.
     */
    const publishAcross = async (tm: Team, body: object, change: (manager: EntityManager) => Promise<unknown>) => {
      const runner = t.db.createQueryRunner();
      await runner.connect();
      try {
        await runner.startTransaction();
        await runner.query(`SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE`, [tm.ws]);
        const [{ pid }] = await runner.query(`SELECT pg_backend_pid() AS pid`);
        const pending = publish(tm.admin, body).then((res) => res);
        await eventually(async () => {
          const [{ blocked }] = await t.db.query(`SELECT count(*)::int AS blocked FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [pid]);
          if (blocked < 1) throw new Error('publish not yet waiting for the workspace lock');
        }, 600, 50);
        await change(runner.manager);
        await runner.commitTransaction();
        return await pending;
      } finally {
        if (runner.isTransactionActive) await runner.rollbackTransaction();
        await runner.release();
      }
    };

    it('answers 409 policy draft changed when a draft lands while the publish compiles, writing nothing', async () => {
      const tm = await team();
      const big = largePolicy(262144);
      await put(tm.developer, { cedar_text: big }).expect(200);
      const before = await written(tm.ws);
      const res = await publishAcross(tm, { expected_draft_hash: sha(big) }, (manager) => storePolicyDraftIn(t, manager, tm.ws, VALID, sha(VALID)));
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ detail: 'policy draft changed' });
      const after = await written(tm.ws);
      expect({ ...after, policy: null }).toEqual({ ...before, policy: null });
      expect(JSON.parse(after.policy).draft_hash).toBe(sha(VALID));
    });

    it('answers 409 policy draft changed when another writer creates the policy while the default is being published', async () => {
      const tm = await team();
      const before = await written(tm.ws);
      const res = await publishAcross(tm, { expected_draft_hash: sha(DEFAULT_POLICY) }, (manager) =>
        createPolicyIn(t, manager, tm.ws, 'pol_000000000000000000000001', DEFAULT_POLICY, sha(DEFAULT_POLICY)),
      );
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ detail: 'policy draft changed' });
      const after = await written(tm.ws);
      expect({ snapshot_version: after.snapshot_version, revisions: after.revisions, audits: after.audits }).toEqual({
        snapshot_version: before.snapshot_version,
        revisions: 0,
        audits: before.audits,
      });
    });

    it('publishes when nothing changed while it waited for the lock', async () => {
      const tm = await team();
      const res = await publishAcross(tm, { expected_draft_hash: sha(DEFAULT_POLICY) }, async () => undefined);
      expect(res.status).toBe(200);
    });
  });

  describe('snapshot part', () => {
    it('is null until a revision is published', async () => {
      const tm = await team();
      const snapshot = await t.app.get(PublicationService).build(tm.ws);
      expect(snapshot!.policy).toBeNull();
    });

    it('refuses a published bundle that no longer compiles with SnapshotUnavailableError', async () => {
      const tm = await team();
      const res = await publish(tm.admin, { expected_draft_hash: sha(DEFAULT_POLICY) }).expect(200);
      // Only a damaged database can hold such a revision: bypass the immutability trigger to make one.
      await corruptPolicyRevision(t, res.body.revision_id, INVALID);
      await expect(t.app.get(PublicationService).build(tm.ws)).rejects.toBeInstanceOf(SnapshotUnavailableError);
    });
  });
});

describe('policy compiler bound (POLICY_COMPILER_CONCURRENCY=1)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ POLICY_COMPILER_CONCURRENCY: '1' });
  });
  afterAll(() => t.close());

  it('answers 503 policy_compiler_busy to compiles over the bound, and nothing else', async () => {
    const owner = await t.signIn();
    const big = largePolicy(262144);
    await t.http().put(`/api/v1/workspaces/${owner.workspaceId}/policy`).set(bearer(owner)).send({ cedar_text: big }).expect(200);
    const results = await Promise.all(Array.from({ length: 8 }, () => t.http().post(`/api/v1/workspaces/${owner.workspaceId}/policy/test`).set(bearer(owner))));
    for (const res of results) {
      if (res.status === 503) expect(res.body).toEqual({ detail: 'policy_compiler_busy' });
      else expect(res.body).toMatchObject({ validation_state: 'valid', diagnostics: [] });
    }
    const statuses = results.map((r) => r.status);
    expect(statuses).toContain(503);
    expect(statuses).toContain(200);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
  });
});

describe('policy compiler timeout (POLICY_COMPILE_TIMEOUT_MS=1)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ POLICY_COMPILE_TIMEOUT_MS: '1' });
  });
  afterAll(() => t.close());

  it('answers 503 policy_compiler_unavailable to test and publish when a compile outlives the bound, writing nothing', async () => {
    const owner = await t.signIn();
    const path = (tail: string) => `/api/v1/workspaces/${owner.workspaceId}/policy${tail}`;
    const state = () => t.db.query(`SELECT snapshot_version, (SELECT count(*)::int FROM policy_revisions WHERE workspace_id = $1) AS revisions FROM workspaces WHERE id = $1`, [owner.workspaceId]);
    const before = await state();
    // A compile starts a worker and loads Cedar: far longer than 1 ms.
    for (const res of [
      await t.http().post(path('/test')).set(bearer(owner)),
      await t.http().post(path('/publish')).set(bearer(owner)).send({ expected_draft_hash: sha(DEFAULT_POLICY) }),
    ]) {
      expect([res.status, res.body]).toEqual([503, { detail: 'policy_compiler_unavailable' }]);
    }
    expect(await state()).toEqual(before);
  });
});
