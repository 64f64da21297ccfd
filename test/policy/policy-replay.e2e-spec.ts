import { createHash } from 'node:crypto';
import { DEFAULT_POLICY } from 'src/modules/policy/dto/policy.document';
import { REPLAY_PAGE } from 'src/modules/policy/policy-replay.service';
import { expectAccessMatrix, roleMembers } from 'test/support/access-matrix';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { DecisionRequest, GatewayEmulator } from 'test/support/gateway-emulator';
import { GatewayStreams, receiptRevision, uid } from 'test/support/streams';
import { policyWrites } from 'test/support/policy';
import { losePublicationState } from 'test/support/factories';

const sha = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
const TOOL_CALL = 'Gateway::Action::"tool.call"';
const LLM_INVOKE = 'Gateway::Action::"llm.invoke"';

/** Published first: every tool call, except Stripe's; no model. */
const PUBLISHED = [
  `@id("tools") permit (principal, action == ${TOOL_CALL}, resource);`,
  `@id("no-stripe") forbid (principal, action == ${TOOL_CALL}, resource) when { resource.connector == "stripe" };`,
  '',
].join('\n');
/** The change: Stripe allowed again, GitHub closed to key_b, models opened. */
const CHANGED = [
  `@id("tools") permit (principal, action == ${TOOL_CALL}, resource);`,
  `@id("no-github-b") forbid (principal == Gateway::Key::"key_b", action == ${TOOL_CALL}, resource)`,
  `  when { resource.connector == "github" };`,
  `@id("models") permit (principal, action == ${LLM_INVOKE}, resource);`,
  '',
].join('\n');
const INVALID = `permit (principal, action == ${TOOL_CALL}, resource)\nwhen { resource.nme == "x" };\n`;

/** A request as the gateway builds it for `key` in `ws`: a tool call, or a model invocation for `model:<name>`. */
function request(ws: string, key: string, target: string, options: { connector?: string | null } = {}): DecisionRequest {
  const inWs = [{ type: 'Gateway::Workspace', id: ws }];
  const isModel = target.startsWith('model:');
  const name = isModel ? target.slice('model:'.length) : target;
  const connector = options.connector === undefined ? name.split('.')[0] : options.connector;
  const resource = isModel
    ? { uid: { type: 'Gateway::Model', id: name }, attrs: { name, provider: 'openai' }, parents: inWs }
    : { uid: { type: 'Gateway::Tool', id: name }, attrs: connector === null ? { name } : { name, connector }, parents: inWs };
  return {
    principal: { type: 'Gateway::Key', id: key },
    action: { type: 'Gateway::Action', id: isModel ? 'llm.invoke' : 'tool.call' },
    resource: resource.uid,
    context: {
      env: 'dev',
      surface: isModel ? 'llm' : 'mcp',
      key: { id: key, agent_id: '', prefix: 'gk_test', scopes: ['mcp'], tools_mode: 'all', attributes: { __entity: { type: 'Gateway::KeyAttributes', id: key } } },
    },
    entities: [
      { uid: { type: 'Gateway::Key', id: key }, attrs: {}, parents: inWs },
      { uid: { type: 'Gateway::KeyAttributes', id: key }, attrs: {}, parents: [], tags: {} },
      resource,
    ],
  };
}

describe('policy replay, explain and diff', () => {
  let t: TestApp;
  let gw: GatewayEmulator;
  let streams: GatewayStreams;
  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url });
    streams = new GatewayStreams(t);
  });
  afterAll(async () => {
    streams.close();
    await t.close();
    await gw.stop();
  });

  const path = (ws: string, tail: string) => `/api/v1/workspaces/${ws}/policy${tail}`;
  const put = (op: Operator, cedarText: string) => t.http().put(path(op.workspaceId, '')).set(bearer(op)).send({ cedar_text: cedarText }).expect(200);
  const replay = (op: Operator, body: object = {}) => t.http().post(path(op.workspaceId, '/replay')).set(bearer(op)).send(body);
  const explain = (op: Operator, body: object) => t.http().post(path(op.workspaceId, '/explain')).set(bearer(op)).send(body);
  const diff = (op: Operator, query: Record<string, string>) => t.http().get(path(op.workspaceId, '/diff')).query(query).set(bearer(op));
  const publish = async (op: Operator, cedarText: string) => {
    const draft = await put(op, cedarText);
    const res = await t
      .http()
      .post(path(op.workspaceId, '/publish'))
      .set(bearer(op))
      .send({ expected_draft_hash: draft.body.draft_hash, expected_revision_id: draft.body.current_revision_id ?? null })
      .expect(200);
    return res.body.revision_id as string;
  };
  /** The gateway decides with the published snapshot and records the receipts; control projects them. */
  const emit = async (op: Operator, requests: DecisionRequest[], at?: Date) => {
    const emitted = await gw.emitDecisions({ redis: streams.redis, prefix: t.config.redisPrefix, jwks: (await t.http().get('/.well-known/control-signing-keys.json').expect(200)).body }, op.workspaceId, requests, at);
    await streams.pass('receipts');
    return emitted;
  };
  const written = (ws: string) => policyWrites(t.db, ws);

  /** A workspace with PUBLISHED live and five decisions made under it (one whose tool entity has no connector). */
  const recorded = async () => {
    const op = await t.signIn();
    const revision = await publish(op, PUBLISHED);
    const ws = op.workspaceId;
    const emitted = await emit(op, [
      request(ws, 'key_a', 'github.create_issue'),
      request(ws, 'key_b', 'github.create_issue'),
      request(ws, 'key_a', 'stripe.refund'),
      request(ws, 'key_a', 'model:gpt-x'),
      request(ws, 'key_b', 'jira.create', { connector: null }),
    ]);
    return { op, revision, emitted };
  };

  describe('the gateway emulator', () => {
    it('records the published revision, the decision and the determining policies on each receipt', async () => {
      const { op, revision, emitted } = await recorded();
      expect(emitted.map((e) => [e.decision, e.policy_revision_id, e.determining_policies])).toEqual([
        ['allow', revision, ['tools']],
        ['allow', revision, ['tools']],
        ['deny', revision, ['no-stripe']],
        ['deny', revision, []],
        ['allow', revision, ['tools']],
      ]);
      const [row] = await t.db.query(`SELECT decision, envelope FROM receipt_revisions WHERE workspace_id = $1 AND receipt_id = $2`, [op.workspaceId, emitted[2].receipt_id]);
      expect(row.decision).toBe('deny');
      expect(row.envelope.authorization).toMatchObject({ decision: 'deny', policy_revision_id: revision, determining_policies: ['no-stripe'], action: { type: 'Gateway::Action', id: 'tool.call' } });
    });
  });

  describe('POST /policy/replay', () => {
    it('reports exactly the flips the change causes, in both directions, and none it does not; writes nothing', async () => {
      const { op, emitted } = await recorded();
      await put(op, CHANGED);
      const before = await written(op.workspaceId);
      const res = await replay(op).expect(200);
      expect(res.body).toEqual({
        draft_hash: sha(CHANGED),
        window: { from: expect.any(String), to: expect.any(String) },
        evaluated: 5,
        unchanged: 2,
        flips: { allow_to_deny: 1, deny_to_allow: 2 },
        not_replayable: 0,
        // key_b's jira call: its tool entity has no `connector`, so `no-github-b` errors (and is skipped, as Cedar does).
        errors: 1,
        changes: [
          {
            action: 'llm.invoke',
            resource: { type: 'Gateway::Model', id: 'gpt-x' },
            principal_type: 'Gateway::Key',
            count: 1,
            example: { receipt_id: emitted[3].receipt_id, key_id: 'key_a', tool: null, model: 'gpt-x', recorded_decision: 'deny', replayed_decision: 'allow', determining_policies: ['models'] },
          },
          {
            action: 'tool.call',
            resource: { type: 'Gateway::Tool', id: 'github.create_issue' },
            principal_type: 'Gateway::Key',
            count: 1,
            example: {
              receipt_id: emitted[1].receipt_id,
              key_id: 'key_b',
              tool: 'github.create_issue',
              model: null,
              recorded_decision: 'allow',
              replayed_decision: 'deny',
              determining_policies: ['no-github-b'],
            },
          },
          {
            action: 'tool.call',
            resource: { type: 'Gateway::Tool', id: 'stripe.refund' },
            principal_type: 'Gateway::Key',
            count: 1,
            example: { receipt_id: emitted[2].receipt_id, key_id: 'key_a', tool: 'stripe.refund', model: null, recorded_decision: 'deny', replayed_decision: 'allow', determining_policies: ['tools'] },
          },
        ],
      });
      const window = res.body.window;
      expect(Date.parse(window.to) - Date.parse(window.from)).toBe(7 * 24 * 3600 * 1000);
      expect(await written(op.workspaceId)).toEqual(before);
    });

    it('replays cedar_text instead of the draft: the published source changes nothing', async () => {
      const { op } = await recorded();
      await put(op, CHANGED);
      const res = await replay(op, { cedar_text: PUBLISHED }).expect(200);
      expect(res.body).toMatchObject({ draft_hash: sha(PUBLISHED), evaluated: 5, unchanged: 5, flips: { allow_to_deny: 0, deny_to_allow: 0 }, errors: 1, changes: [] });
    });

    it('groups flips by action, resource and principal type, with a count and one example', async () => {
      const { op } = await recorded();
      const ws = op.workspaceId;
      await emit(op, [request(ws, 'key_c', 'stripe.refund'), request(ws, 'key_d', 'stripe.refund')]);
      const res = await replay(op, { cedar_text: CHANGED }).expect(200);
      expect(res.body.flips).toEqual({ allow_to_deny: 1, deny_to_allow: 4 });
      expect(res.body.changes.map((c: { resource: { id: string }; count: number }) => [c.resource.id, c.count])).toEqual([
        ['stripe.refund', 3],
        ['gpt-x', 1],
        ['github.create_issue', 1],
      ]);
    });

    it('counts receipts without a recorded request, or with a malformed one, as not replayable, a receipt once over its revisions, and a refused request as an error', async () => {
      const { op, emitted } = await recorded();
      const ws = op.workspaceId;
      const now = new Date().toISOString();
      const invocation = uid('inv');
      await streams.add(
        'receipts',
        receiptRevision(ws, { occurred_at: now, updated_at: now }),
        receiptRevision(ws, { occurred_at: now, updated_at: now, envelope: { authorization: { principal: 'key_a', decision: 'allow' } } }),
        // Two revisions of one invocation, both carrying the (same) request: one decision.
        receiptRevision(ws, { invocation_id: invocation, receipt_revision: 1, occurred_at: now, updated_at: now, decision: 'deny', envelope: { authorization: { ...request(ws, 'key_a', 'stripe.refund'), decision: 'deny', policy_revision_id: null, determining_policies: [] } } }),
        receiptRevision(ws, { invocation_id: invocation, receipt_revision: 2, occurred_at: now, updated_at: now, decision: 'deny', envelope: { authorization: { ...request(ws, 'key_a', 'stripe.refund'), decision: 'deny', policy_revision_id: null, determining_policies: [] } } }),
      );
      // A request Cedar refuses (a malformed entity): evaluated, counted in errors, neither unchanged nor flipped.
      const refused = { ...request(ws, 'key_a', 'github.create_issue'), entities: [{ uid: 'not an entity' }], decision: 'allow', policy_revision_id: null, determining_policies: [] };
      await streams.add('receipts', receiptRevision(ws, { occurred_at: now, updated_at: now, envelope: { authorization: refused } }));
      await streams.pass('receipts');
      const res = await replay(op, { cedar_text: PUBLISHED }).expect(200);
      expect(res.body).toMatchObject({ evaluated: 7, unchanged: 6, flips: { allow_to_deny: 0, deny_to_allow: 0 }, not_replayable: 2, errors: 2 });
      expect(emitted).toHaveLength(5);
    });

    it('counts not-replayable receipts among the newest `limit` receipts of the span only, however wide the window', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      await publish(op, PUBLISHED);
      const day = 24 * 3600 * 1000;
      const at = (ms: number) => new Date(Date.now() - ms).toISOString();
      // Five receipts without a recorded request, the oldest long ago.
      await streams.add('receipts', ...[0, 1, 2, 40, 300].map((d) => receiptRevision(ws, { occurred_at: at(d * day + 1000), updated_at: at(d * day + 1000) })));
      await streams.pass('receipts');
      const everything = { from: '1000-01-01T00:00:00Z', to: new Date(Date.now() + 60_000).toISOString() };
      expect((await replay(op, { ...everything, cedar_text: PUBLISHED }).expect(200)).body).toMatchObject({ evaluated: 0, not_replayable: 5 });
      expect((await replay(op, { ...everything, limit: 3, cedar_text: PUBLISHED }).expect(200)).body).toMatchObject({ evaluated: 0, not_replayable: 3 });
    });

    it('replays only the window, and only the newest `limit` decisions of it', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      await publish(op, PUBLISHED);
      const day = 24 * 3600 * 1000;
      const now = Date.now();
      await emit(op, [request(ws, 'key_a', 'stripe.refund')], new Date(now - 3 * day));
      const [newest] = await emit(op, [request(ws, 'key_b', 'stripe.refund')], new Date(now - day));
      await emit(op, [request(ws, 'key_c', 'stripe.refund')], new Date(now - 10 * day));
      const from = new Date(now - 4 * day).toISOString();
      const to = new Date(now - 2 * day).toISOString();
      const windowed = await replay(op, { from, to, cedar_text: CHANGED }).expect(200);
      expect(windowed.body).toMatchObject({ window: { from, to }, evaluated: 1, flips: { allow_to_deny: 0, deny_to_allow: 1 } });
      // The default window (7 days) leaves out the decision of ten days ago.
      expect((await replay(op, { cedar_text: CHANGED }).expect(200)).body.evaluated).toBe(2);
      const limited = await replay(op, { limit: 1, cedar_text: CHANGED }).expect(200);
      expect(limited.body.evaluated).toBe(1);
      expect(limited.body.changes[0].example.receipt_id).toBe(newest.receipt_id);
    });

    it('reads the decisions page by page, each once, the limit cutting inside a page (all recorded at the same instant)', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      await publish(op, PUBLISHED);
      const n = REPLAY_PAGE + 500;
      // Recorded as PUBLISHED decides them (written to the stream directly: the emulator's Cedar adds nothing here).
      // Odd: Stripe (deny, allowed by the change); every fourth: GitHub for key_b (allow, denied by it); the rest unchanged.
      const at = new Date().toISOString();
      const recordedAs = (r: DecisionRequest, decision: 'allow' | 'deny') =>
        receiptRevision(ws, { occurred_at: at, updated_at: at, decision, key_id: r.principal.id, tool: r.resource.id, envelope: { authorization: { ...r, decision, policy_revision_id: null, determining_policies: [] } } });
      await streams.add(
        'receipts',
        ...Array.from({ length: n }, (_, i) => (i % 2 ? recordedAs(request(ws, `key_${i}`, 'stripe.refund'), 'deny') : recordedAs(request(ws, i % 4 ? `key_${i}` : 'key_b', 'github.create_issue'), 'allow'))),
      );
      await streams.pass('receipts');
      const all = (await replay(op, { cedar_text: CHANGED }).expect(200)).body;
      expect(all).toMatchObject({ evaluated: n, unchanged: n / 4, flips: { allow_to_deny: n / 4, deny_to_allow: n / 2 }, not_replayable: 0, errors: 0 });
      expect(all.changes.map((c: { resource: { id: string }; count: number }) => [c.resource.id, c.count])).toEqual([['stripe.refund', n / 2], ['github.create_issue', n / 4]]);
      const limited = (await replay(op, { cedar_text: CHANGED, limit: REPLAY_PAGE + 1 }).expect(200)).body;
      expect(limited.evaluated).toBe(REPLAY_PAGE + 1);
      expect(limited.unchanged + limited.flips.allow_to_deny + limited.flips.deny_to_allow).toBe(REPLAY_PAGE + 1);
    });

    it('refuses window and limit bounds with the field-shaped detail', async () => {
      const op = await t.signIn();
      const cases: [object, object][] = [
        [{ limit: 0 }, { loc: ['body', 'limit'], msg: 'limit must not be less than 1', type: 'greater_than_equal' }],
        [{ limit: 100001 }, { loc: ['body', 'limit'], msg: 'limit must not be greater than 100000', type: 'less_than_equal' }],
        [{ limit: 1.5 }, { loc: ['body', 'limit'], msg: expect.any(String), type: expect.any(String) }],
        [{ from: '2026-01-01T00:00:00Z' }, { loc: ['body', 'to'], msg: 'from and to must be provided together', type: 'value_error' }],
        [{ from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' }, { loc: ['body', 'from'], msg: 'invalid UTC window', type: 'value_error' }],
        [{ from: '2026-01-01T00:00:00+02:00', to: '2026-01-02T00:00:00Z' }, { loc: ['body', 'from'], msg: 'invalid UTC window', type: 'value_error' }],
        [{ cedar_text: '' }, { loc: ['body', 'cedar_text'], msg: 'cedar_text must not be empty', type: 'string_too_short' }],
        [{ cedar_text: 'x'.repeat(262145) }, { loc: ['body', 'cedar_text'], msg: 'cedar_text must be at most 262144 bytes', type: 'string_too_long' }],
        [{ extra: 1 }, { loc: ['body', 'extra'], msg: 'extra fields not permitted', type: 'extra_forbidden' }],
      ];
      for (const [body, detail] of cases) {
        const res = await replay(op, body);
        expect([res.status, res.body]).toEqual([422, { detail: [detail] }]);
      }
      expect((await replay(op, { limit: 100000, from: '2026-01-01T00:00:00Z', to: '2026-01-01T00:00:00.001Z' }).expect(200)).body.evaluated).toBe(0);
    });

    it('answers 503 policy_compiler_busy to a replay over the bound (two at a time with the default bound of 2), writing nothing', async () => {
      const op = await t.signIn();
      await publish(op, PUBLISHED);
      const ws = op.workspaceId;
      // Distinct keys: the seam evaluates identical requests once, and these must keep the workers busy.
      await emit(op, Array.from({ length: 3000 }, (_, i) => request(ws, `key_${i}`, i % 2 ? 'github.create_issue' : 'stripe.refund')));
      const before = await written(ws);
      const results = await Promise.all(Array.from({ length: 4 }, () => replay(op, { cedar_text: CHANGED })));
      for (const res of results) {
        if (res.status === 503) expect(res.body).toEqual({ detail: 'policy_compiler_busy' });
        else expect([res.status, res.body.evaluated]).toEqual([200, 3000]);
      }
      const statuses = results.map((r) => r.status);
      expect(statuses).toContain(503);
      expect(statuses).toContain(200);
      expect(await written(ws)).toEqual(before);
    });

    it('answers test and publish while a replay holds every worker: compiles come first, never refused because of a replay', async () => {
      const op = await t.signIn();
      await publish(op, PUBLISHED);
      const ws = op.workspaceId;
      // Distinct keys: the seam evaluates identical requests once, and these must keep the workers busy.
      await emit(op, Array.from({ length: 3000 }, (_, i) => request(ws, `key_${i}`, i % 2 ? 'github.create_issue' : 'stripe.refund')));
      let replaying = true;
      const running = replay(op, { cedar_text: CHANGED }).then((res) => {
        replaying = false;
        return res;
      });
      const tests: number[] = [];
      do {
        const res = await t.http().post(path(ws, '/test')).set(bearer(op));
        tests.push(res.status);
        expect([res.status, res.body.validation_state]).toEqual([200, 'valid']);
      } while (replaying);
      expect((await running).body.evaluated).toBe(3000);
      expect(tests.length).toBeGreaterThan(0);
      await publish(op, CHANGED);
    });

    it('answers 500 workspace publication state is unavailable to replay, explain and diff without a staged publication, writing nothing', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      await losePublicationState(t, ws);
      const before = await written(ws);
      for (const res of [
        await replay(op),
        await explain(op, { against: 'draft', ...request(ws, 'key_a', 'stripe.refund') }),
        await diff(op, { from: 'published', to: 'draft' }),
      ]) {
        expect([res.status, res.body]).toEqual([500, { detail: 'workspace publication state is unavailable' }]);
      }
      expect(await written(ws)).toEqual(before);
    });

    it('answers a draft that does not compile with 422 and the policy document, exactly as publish does', async () => {
      const op = await t.signIn();
      const draft = await put(op, INVALID);
      const before = await written(op.workspaceId);
      const res = await replay(op).expect(422);
      const published = await t.http().post(path(op.workspaceId, '/publish')).set(bearer(op)).send({ expected_draft_hash: draft.body.draft_hash }).expect(422);
      expect(res.body).toEqual(published.body);
      expect(res.body).toMatchObject({ cedar_text: INVALID, validation_state: 'invalid', diagnostics: [expect.objectContaining({ severity: 'error', code: 'validation_error', line: 2 })] });
      // A cedar_text that does not compile: the document carries that source and its diagnostics.
      await put(op, PUBLISHED);
      const override = await replay(op, { cedar_text: INVALID }).expect(422);
      expect(override.body).toMatchObject({ cedar_text: INVALID, draft_hash: sha(INVALID), validation_state: 'invalid', diagnostics: res.body.diagnostics });
      expect((await written(op.workspaceId)).audits).toBe(before.audits + 1); // only the PUT
    });
  });

  describe('POST /policy/explain', () => {
    const allowGithub = (ws: string) => request(ws, 'key_b', 'github.create_issue');

    it('explains a request against the draft and the published revision, with policy positions and evaluation errors', async () => {
      const { op, revision } = await recorded();
      await put(op, CHANGED);
      const before = await written(op.workspaceId);
      const published = await explain(op, { against: 'published', ...allowGithub(op.workspaceId) }).expect(200);
      expect(published.body).toEqual({
        against: 'published',
        revision_id: revision,
        draft_hash: sha(PUBLISHED),
        decision: 'allow',
        determining_policies: [{ id: 'tools', line: 1, column: 1 }],
        errors: [],
      });
      const draft = await explain(op, { against: 'draft', ...allowGithub(op.workspaceId) }).expect(200);
      expect(draft.body).toEqual({
        against: 'draft',
        revision_id: null,
        draft_hash: sha(CHANGED),
        decision: 'deny',
        determining_policies: [{ id: 'no-github-b', line: 2, column: 1 }],
        errors: [],
      });
      const erroring = await explain(op, { against: 'draft', ...request(op.workspaceId, 'key_b', 'jira.create', { connector: null }) }).expect(200);
      expect(erroring.body).toMatchObject({
        decision: 'allow',
        determining_policies: [{ id: 'tools', line: 1, column: 1 }],
        errors: [{ policy_id: 'no-github-b', message: expect.stringContaining('connector'), line: 3, column: 10 }],
      });
      expect(await written(op.workspaceId)).toEqual(before);
    });

    it('takes the request from a receipt of the workspace; another workspace receipt is not found', async () => {
      const { op, emitted } = await recorded();
      await put(op, CHANGED);
      const res = await explain(op, { against: 'draft', receipt_id: emitted[2].receipt_id }).expect(200);
      expect(res.body).toMatchObject({ decision: 'allow', determining_policies: [{ id: 'tools', line: 1, column: 1 }] });
      const other = await t.signIn();
      const foreign = await explain(other, { against: 'draft', receipt_id: emitted[2].receipt_id });
      expect([foreign.status, foreign.body]).toEqual([404, { detail: 'receipt not found' }]);
      const missing = await explain(op, { against: 'draft', receipt_id: 'rcp_missing' });
      expect([missing.status, missing.body]).toEqual([404, { detail: 'receipt not found' }]);
    });

    it('refuses a receipt without a request, both a receipt and a request, a missing field, and a draft that does not compile', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      const plain = receiptRevision(ws, { occurred_at: new Date().toISOString() });
      await streams.add('receipts', plain);
      await streams.pass('receipts');
      const cases: [object, object][] = [
        [{ against: 'draft', receipt_id: plain.receipt_id }, { loc: ['body', 'receipt_id'], msg: 'receipt carries no authorization request', type: 'value_error' }],
        [{ against: 'draft', receipt_id: plain.receipt_id, ...allowGithub(ws) }, { loc: ['body', 'receipt_id'], msg: 'provide either receipt_id or a request, not both', type: 'value_error' }],
        [{ against: 'draft', principal: { type: 'Gateway::Key', id: 'k' } }, { loc: ['body', 'action'], msg: 'field required', type: 'missing' }],
        [{ against: 'live', ...allowGithub(ws) }, { loc: ['body', 'against'], msg: expect.any(String), type: 'enum' }],
        [{ against: 'draft', ...allowGithub(ws), entities: [{ uid: 'not an entity' }] }, { loc: ['body'], msg: 'the authorization request could not be evaluated', type: 'value_error' }],
      ];
      for (const [body, detail] of cases) {
        const res = await explain(op, body);
        expect([res.status, res.body]).toEqual([422, { detail: [detail] }]);
      }
      await put(op, INVALID);
      const rejected = await explain(op, { against: 'draft', ...allowGithub(ws) }).expect(422);
      expect(rejected.body).toMatchObject({ cedar_text: INVALID, validation_state: 'invalid' });
      // The published side (the default policy here) still answers.
      const live = await explain(op, { against: 'published', ...allowGithub(ws) }).expect(200);
      expect(live.body).toMatchObject({ revision_id: null, draft_hash: sha(DEFAULT_POLICY), decision: 'allow', determining_policies: [{ id: 'policy0', line: 3, column: 1 }] });
    });
  });

  describe('GET /policy/diff', () => {
    it('lists policies added, removed and changed by id annotation, with a unified diff per changed policy', async () => {
      const op = await t.signIn();
      const first = await publish(op, PUBLISHED);
      const edited = CHANGED.replace(`@id("tools") permit (principal, action == ${TOOL_CALL}, resource);`, `@id("tools") permit (principal, action == ${TOOL_CALL}, resource)\n  when { context.env == "dev" };`);
      await put(op, edited);
      const before = await written(op.workspaceId);
      const res = await diff(op, { from: first, to: 'draft' }).expect(200);
      expect(res.body).toEqual({
        from: { ref: first, revision_id: first, draft_hash: sha(PUBLISHED) },
        to: { ref: 'draft', revision_id: null, draft_hash: sha(edited) },
        added: [
          { id: 'no-github-b', text: `@id("no-github-b") forbid (principal == Gateway::Key::"key_b", action == ${TOOL_CALL}, resource)\n  when { resource.connector == "github" };` },
          { id: 'models', text: `@id("models") permit (principal, action == ${LLM_INVOKE}, resource);` },
        ],
        removed: [{ id: 'no-stripe', text: `@id("no-stripe") forbid (principal, action == ${TOOL_CALL}, resource) when { resource.connector == "stripe" };` }],
        changed: [
          {
            id: 'tools',
            diff: `@@ -1 +1,2 @@\n-@id("tools") permit (principal, action == ${TOOL_CALL}, resource);\n+@id("tools") permit (principal, action == ${TOOL_CALL}, resource)\n+  when { context.env == "dev" };\n`,
          },
        ],
        unchanged: 0,
      });
      const same = await diff(op, { from: 'published', to: first }).expect(200);
      expect(same.body).toMatchObject({ added: [], removed: [], changed: [], unchanged: 2 });
      expect(await written(op.workspaceId)).toEqual(before);
    });

    it('matches policies without an id annotation by position; published is the default policy until one is', async () => {
      const op = await t.signIn();
      await put(op, `${DEFAULT_POLICY}forbid (principal, action, resource) when { context.env == "prod" };\n`);
      const res = await diff(op, { from: 'published', to: 'draft' }).expect(200);
      expect(res.body).toMatchObject({
        from: { ref: 'published', revision_id: null, draft_hash: sha(DEFAULT_POLICY) },
        added: [{ id: 'policy1', text: 'forbid (principal, action, resource) when { context.env == "prod" };' }],
        removed: [],
        changed: [],
        unchanged: 1,
      });
    });

    it('answers 404 for a revision of another workspace or none, and 422 without both sides', async () => {
      const op = await t.signIn();
      const other = await t.signIn();
      const foreign = await publish(other, PUBLISHED);
      for (const ref of [foreign, 'rev_missing']) {
        const res = await diff(op, { from: ref, to: 'draft' });
        expect([res.status, res.body]).toEqual([404, { detail: 'policy revision not found' }]);
      }
      const missing = await diff(op, { from: 'draft' });
      expect([missing.status, missing.body]).toEqual([422, { detail: [{ loc: ['query', 'to'], msg: 'field required', type: 'missing' }] }]);
    });
  });

  describe('access', () => {
    const explainBody = (ws: string) => ({ against: 'published', ...request(ws, 'key_a', 'github.create_issue') });
    it('applies the authorization matrix and the frozen rule to every new route', async () => {
      const owner = await t.signIn();
      const members = await roleMembers(t, owner);
      const ws = owner.workspaceId;
      await expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => path(w, '/replay'), body: {}, minRole: 'developer', read: false });
      await expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => path(w, '/explain'), body: explainBody(ws), minRole: 'developer', read: false });
      await expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => path(w, '/diff?from=draft&to=published'), minRole: 'viewer', read: true });
    });
  });
});

describe('policy replay and explain past the compile bound (POLICY_COMPILE_TIMEOUT_MS=1)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ POLICY_COMPILE_TIMEOUT_MS: '1' });
  });
  afterAll(() => t.close());

  it('answers 503 policy_compiler_unavailable, as compiles do, writing nothing', async () => {
    const op = await t.signIn();
    const ws = op.workspaceId;
    const audits = async () => (await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE workspace_id = $1`, [ws]))[0].n;
    const before = await audits();
    // A compile starts a worker and loads Cedar: far longer than 1 ms.
    for (const res of [
      await t.http().post(`/api/v1/workspaces/${ws}/policy/replay`).set(bearer(op)).send({ cedar_text: CHANGED }),
      await t.http().post(`/api/v1/workspaces/${ws}/policy/explain`).set(bearer(op)).send({ against: 'draft', ...request(ws, 'key_a', 'stripe.refund') }),
    ]) {
      expect([res.status, res.body]).toEqual([503, { detail: 'policy_compiler_unavailable' }]);
    }
    expect(await audits()).toBe(before);
  });
});
