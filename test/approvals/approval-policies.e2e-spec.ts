import { PublicationService } from 'src/modules/publication/publication.service';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { freezeWorkspace } from 'test/support/factories';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const allow = (over: Record<string, unknown> = {}) => ({
  rule_id: 'refunds',
  effect: 'allow',
  actions: ['tool.call'],
  tools: ['stripe.*'],
  environments: ['prod'],
  approver_roles: ['owner'],
  approver_user_ids: [],
  quorum: 1,
  ...over,
});

describe('approval policies', () => {
  let t: TestApp;
  let owner: Operator;
  let admin: Operator;
  let viewer: Operator;
  let outsider: Operator;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.signIn();
    admin = await t.member(owner, 'admin');
    viewer = await t.member(owner, 'viewer');
    outsider = await t.signIn();
  });
  afterAll(() => t.close());

  const base = (ws: string) => `/api/v1/workspaces/${ws}/approval-policies`;
  const create = (op: Operator, body: Record<string, unknown>, ws = op.workspaceId) => t.http().post(base(ws)).set(bearer(op)).send(body);
  const revise = (op: Operator, id: string, body: Record<string, unknown>, ws = op.workspaceId) => t.http().put(`${base(ws)}/${id}`).set(bearer(op)).send(body);
  const disable = (op: Operator, id: string, body: Record<string, unknown>, ws = op.workspaceId) => t.http().post(`${base(ws)}/${id}/disable`).set(bearer(op)).send(body);
  const count = async (sql: string, params: unknown[]) => Number((await t.db.query(sql, params))[0].n);
  const policyRows = (ws: string) => count(`SELECT count(*) AS n FROM approval_policies WHERE workspace_id = $1`, [ws]);
  const revisionRows = (ws: string) => count(`SELECT count(*) AS n FROM approval_policy_revisions WHERE workspace_id = $1`, [ws]);
  const auditRows = (ws: string, action: string) => count(`SELECT count(*) AS n FROM audit_events WHERE workspace_id = $1 AND action = $2`, [ws, action]);
  const snapshotVersion = async (ws: string) => (await t.db.query(`SELECT snapshot_version FROM workspaces WHERE id = $1`, [ws]))[0].snapshot_version as number;
  /** A fresh owner with their own workspace, so tests do not share policies. */
  const freshOwner = () => t.signIn();
  let names = 0;
  const uniqueName = () => `policy-${++names}`;

  describe('create', () => {
    it('answers 200 with the policy at revision 1, rules normalized, and writes a revision, an audit row and a snapshot', async () => {
      const op = await freshOwner();
      const before = await snapshotVersion(op.workspaceId);
      const res = await create(op, {
        name: 'Refunds',
        rules: [allow({ tools: ['stripe.refund', 'stripe.*', 'stripe.refund'], environments: ['prod', 'dev', 'prod'], approver_roles: ['owner', 'admin'], approver_user_ids: [op.userId, op.userId] })],
      }).expect(200);
      expect(res.body).toEqual({
        schema_version: 1,
        policy_id: expect.stringMatching(/^apy_[0-9a-f]{24}$/),
        workspace_id: op.workspaceId,
        name: 'Refunds',
        status: 'active',
        revision: 1,
        revision_id: expect.stringMatching(/^ayr_[0-9a-f]{24}$/),
        rules: [allow({ tools: ['stripe.*', 'stripe.refund'], environments: ['dev', 'prod'], approver_roles: ['admin', 'owner'], approver_user_ids: [op.userId] })],
        created_at: expect.stringMatching(RFC3339),
        updated_at: expect.stringMatching(RFC3339),
      });
      const [revision] = await t.db.query(`SELECT id, revision, name, created_by FROM approval_policy_revisions WHERE policy_id = $1`, [res.body.policy_id]);
      expect(revision).toEqual({ id: res.body.revision_id, revision: 1, name: 'Refunds', created_by: op.userId });
      expect(await snapshotVersion(op.workspaceId)).toBe(before + 1);
      const [audit] = await t.db.query(`SELECT actor_user_id, target, detail FROM audit_events WHERE workspace_id = $1 AND action = 'approval_policy.create'`, [op.workspaceId]);
      expect(audit).toEqual({
        actor_user_id: op.userId,
        target: res.body.policy_id,
        detail: { policy_id: res.body.policy_id, revision_id: res.body.revision_id, status: 'active', snapshot_version: before + 1 },
      });
    });

    it('puts the active rules and their policy_set_hash into the snapshot', async () => {
      const op = await freshOwner();
      const publications = t.app.get(PublicationService);
      const empty = (await publications.build(op.workspaceId))!.approval_rules as { policy_set_hash: string; rules: unknown[] };
      expect(empty).toEqual({ policy_set_hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), rules: [] });
      const policy = (await create(op, { name: 'p', rules: [allow({ rule_id: 'b' }), allow({ rule_id: 'a', effect: 'deny' })] }).expect(200)).body;
      const snapshot = (await publications.build(op.workspaceId))!;
      const part = snapshot.approval_rules as { policy_set_hash: string; rules: Record<string, unknown>[] };
      expect(snapshot.version).toBe(await snapshotVersion(op.workspaceId));
      expect(part.policy_set_hash).not.toBe(empty.policy_set_hash);
      expect(part.rules).toEqual([
        { policy_id: policy.policy_id, revision_id: policy.revision_id, ...allow({ rule_id: 'a', effect: 'deny' }) },
        { policy_id: policy.policy_id, revision_id: policy.revision_id, ...allow({ rule_id: 'b' }) },
      ]);
    });

    it('answers 409 approval policy name already exists for a taken name (disabled ones included) and writes nothing', async () => {
      const op = await freshOwner();
      const first = (await create(op, { name: 'dup', rules: [allow()] }).expect(200)).body;
      await disable(op, first.policy_id, { expected_revision: 1 }).expect(200);
      const version = await snapshotVersion(op.workspaceId);
      await create(op, { name: 'dup', rules: [allow()] }).expect(409, { detail: 'approval policy name already exists' });
      expect(await policyRows(op.workspaceId)).toBe(1);
      expect(await snapshotVersion(op.workspaceId)).toBe(version);
      expect(await auditRows(op.workspaceId, 'approval_policy.create')).toBe(1);
    });

    it('lets exactly one of two concurrent creates with one name succeed', async () => {
      const op = await freshOwner();
      const results = await Promise.all([create(op, { name: 'race', rules: [allow()] }), create(op, { name: 'race', rules: [allow()] })]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
      expect(await policyRows(op.workspaceId)).toBe(1);
    });

    it('answers 422 expected_revision is only valid when updating', async () => {
      const res = await create(owner, { name: uniqueName(), rules: [allow()], expected_revision: 1 }).expect(422);
      expect(res.body).toEqual({ detail: [{ loc: ['body', 'expected_revision'], msg: 'expected_revision is only valid when updating', type: 'value_error' }] });
    });

    it('answers 422 for a blank, empty, oversize or missing name, missing rules and extra fields', async () => {
      const blank = await create(owner, { name: '   ', rules: [allow()] }).expect(422);
      expect(blank.body).toEqual({ detail: [{ loc: ['body', 'name'], msg: 'name must not be blank', type: 'value_error' }] });
      await create(owner, { name: '', rules: [allow()] }).expect(422);
      await create(owner, { name: 'x'.repeat(129), rules: [allow()] }).expect(422);
      await create(owner, { name: 'x'.repeat(128), rules: [allow({ rule_id: 'long-name-ok' })] }).expect(200);
      const missing = await create(owner, { rules: [allow()] }).expect(422);
      expect(missing.body.detail).toEqual([{ loc: ['body', 'name'], msg: 'field required', type: 'missing' }]);
      const noRules = await create(owner, { name: uniqueName() }).expect(422);
      expect(noRules.body.detail).toEqual([{ loc: ['body', 'rules'], msg: 'field required', type: 'missing' }]);
      const extra = await create(owner, { name: uniqueName(), rules: [allow()], status: 'active' }).expect(422);
      expect(extra.body.detail).toEqual([{ loc: ['body', 'status'], msg: 'extra fields not permitted', type: 'extra_forbidden' }]);
    });

    it.each([
      ['no rules', [], ['body', 'rules'], 'rules must contain between 1 and 100 entries'],
      ['101 rules', Array.from({ length: 101 }, (_, i) => allow({ rule_id: `r${i}` })), ['body', 'rules'], 'rules must contain between 1 and 100 entries'],
      ['a missing rule field', [{ ...allow(), quorum: undefined }], ['body', 'rules', 0], 'rule fields are invalid'],
      ['an unknown rule field', [{ ...allow(), priority: 1 }], ['body', 'rules', 0], 'rule fields are invalid'],
      ['a bad rule_id', [allow({ rule_id: '_x' })], ['body', 'rules', 0, 'rule_id'], 'rule fields are invalid'],
      ['a duplicate rule_id', [allow(), allow()], ['body', 'rules', 1, 'rule_id'], 'rule_id must be unique'],
      ['a bad effect', [allow({ effect: 'require' })], ['body', 'rules', 0, 'effect'], 'effect must be allow or deny'],
      ['a wildcard action', [allow({ actions: ['*'] })], ['body', 'rules', 0, 'actions'], 'actions must explicitly match tool.call'],
      ['no tools', [allow({ tools: [] })], ['body', 'rules', 0, 'tools'], 'tools must not be empty'],
      ['a ? pattern', [allow({ tools: ['stripe.refun?'] })], ['body', 'rules', 0, 'tools'], 'tool patterns support literal names and * only'],
      ['a [ ] pattern', [allow({ tools: ['stripe.[a]'] })], ['body', 'rules', 0, 'tools'], 'tool patterns support literal names and * only'],
      ['whitespace in a pattern', [allow({ tools: ['stripe refund'] })], ['body', 'rules', 0, 'tools'], 'tool patterns support literal names and * only'],
      ['101 tool patterns', [allow({ tools: Array.from({ length: 101 }, (_, i) => `t${i}`) })], ['body', 'rules', 0, 'tools'], 'rule fields are invalid'],
      ['a 257-char pattern', [allow({ tools: ['t'.repeat(257)] })], ['body', 'rules', 0, 'tools'], 'rule fields are invalid'],
      ['no environments', [allow({ environments: [] })], ['body', 'rules', 0, 'environments'], 'environments are invalid'],
      ['an unknown environment', [allow({ environments: ['test'] })], ['body', 'rules', 0, 'environments'], 'environments are invalid'],
      ['a non-approver role', [allow({ approver_roles: ['developer'] })], ['body', 'rules', 0, 'approver_roles'], 'approver principals are invalid'],
      ['no approver at all', [allow({ approver_roles: [], approver_user_ids: [] })], ['body', 'rules', 0, 'approver_roles'], 'approver principals are invalid'],
      ['a malformed user id', [allow({ approver_user_ids: ['alice'] })], ['body', 'rules', 0, 'approver_user_ids'], 'approver principals are invalid'],
      ['101 user ids', [allow({ approver_user_ids: Array.from({ length: 101 }, (_, i) => `usr_${i}`) })], ['body', 'rules', 0, 'approver_user_ids'], 'approver principals are invalid'],
      ['quorum 3', [allow({ quorum: 3 })], ['body', 'rules', 0, 'quorum'], 'quorum must be 1 or 2'],
      ['quorum 0', [allow({ quorum: 0 })], ['body', 'rules', 0, 'quorum'], 'quorum must be 1 or 2'],
    ])('answers 422 for %s with the exact message and writes nothing', async (_, rules, loc, msg) => {
      const before = await policyRows(owner.workspaceId);
      const res = await create(owner, { name: uniqueName(), rules }).expect(422);
      expect(res.body).toEqual({ detail: [{ loc, msg, type: 'value_error' }] });
      expect(await policyRows(owner.workspaceId)).toBe(before);
    });

    it('answers 422 approver principals are invalid for an approver who is not a current member', async () => {
      const before = await policyRows(owner.workspaceId);
      const res = await create(owner, { name: uniqueName(), rules: [allow({ rule_id: 'a' }), allow({ rule_id: 'b', approver_user_ids: [admin.userId, outsider.userId] })] }).expect(422);
      expect(res.body).toEqual({ detail: [{ loc: ['body', 'rules', 1, 'approver_user_ids'], msg: 'approver principals are invalid', type: 'value_error' }] });
      expect(await policyRows(owner.workspaceId)).toBe(before);
      await create(owner, { name: uniqueName(), rules: [allow({ approver_user_ids: [admin.userId, viewer.userId] })] }).expect(200);
    });
  });

  describe('read', () => {
    it('lists every policy, disabled included, ordered by name then id; gets one', async () => {
      const op = await freshOwner();
      const b = (await create(op, { name: 'beta', rules: [allow()] }).expect(200)).body;
      const a = (await create(op, { name: 'alpha', rules: [allow()] }).expect(200)).body;
      await disable(op, b.policy_id, { expected_revision: 1 }).expect(200);
      const res = await t.http().get(base(op.workspaceId)).set(bearer(op)).expect(200);
      expect(res.body.approval_policies.map((p: { name: string; status: string }) => [p.name, p.status])).toEqual([
        ['alpha', 'active'],
        ['beta', 'disabled'],
      ]);
      const one = await t.http().get(`${base(op.workspaceId)}/${a.policy_id}`).set(bearer(op)).expect(200);
      expect(one.body).toEqual(a);
    });

    it('answers 404 approval policy not found for an unknown id or another workspace\'s policy', async () => {
      const other = await freshOwner();
      const theirs = (await create(other, { name: 'theirs', rules: [allow()] }).expect(200)).body;
      for (const id of ['apy_000000000000000000000000', theirs.policy_id]) {
        await t.http().get(`${base(owner.workspaceId)}/${id}`).set(bearer(owner)).expect(404, { detail: 'approval policy not found' });
        await revise(owner, id, { name: 'x', rules: [allow()], expected_revision: 1 }).expect(404, { detail: 'approval policy not found' });
        await disable(owner, id, { expected_revision: 1 }).expect(404, { detail: 'approval policy not found' });
      }
    });
  });

  describe('revise', () => {
    it('replaces name and rules at revision current+1 with a new revision id, audit row and snapshot', async () => {
      const op = await freshOwner();
      const created = (await create(op, { name: 'v1', rules: [allow({ rule_id: 'a' }), allow({ rule_id: 'b' })] }).expect(200)).body;
      const version = await snapshotVersion(op.workspaceId);
      const res = await revise(op, created.policy_id, { name: 'v2', rules: [allow({ rule_id: 'c', quorum: 2 })], expected_revision: 1 }).expect(200);
      expect(res.body).toMatchObject({ policy_id: created.policy_id, name: 'v2', status: 'active', revision: 2, rules: [allow({ rule_id: 'c', quorum: 2 })], created_at: created.created_at });
      expect(res.body.revision_id).not.toBe(created.revision_id);
      expect(await snapshotVersion(op.workspaceId)).toBe(version + 1);
      const revisions = await t.db.query(`SELECT revision, id FROM approval_policy_revisions WHERE policy_id = $1 ORDER BY revision`, [created.policy_id]);
      expect(revisions).toEqual([
        { revision: 1, id: created.revision_id },
        { revision: 2, id: res.body.revision_id },
      ]);
      expect(await auditRows(op.workspaceId, 'approval_policy.revise')).toBe(1);
      await revise(op, created.policy_id, { name: 'v3', rules: [allow()], expected_revision: 2 }).expect(200);
    });

    it('answers 409 approval policy revision changed for a stale expected_revision and writes nothing', async () => {
      const op = await freshOwner();
      const created = (await create(op, { name: 'p', rules: [allow()] }).expect(200)).body;
      await revise(op, created.policy_id, { name: 'p', rules: [allow()], expected_revision: 1 }).expect(200);
      const version = await snapshotVersion(op.workspaceId);
      for (const expected of [1, 3]) {
        await revise(op, created.policy_id, { name: 'q', rules: [allow()], expected_revision: expected }).expect(409, { detail: 'approval policy revision changed' });
      }
      expect(await revisionRows(op.workspaceId)).toBe(2);
      expect(await snapshotVersion(op.workspaceId)).toBe(version);
    });

    it('lets exactly one of two concurrent revisions with the same expected_revision succeed', async () => {
      const op = await freshOwner();
      const created = (await create(op, { name: 'p', rules: [allow()] }).expect(200)).body;
      const results = await Promise.all([1, 2].map((i) => revise(op, created.policy_id, { name: `p${i}`, rules: [allow()], expected_revision: 1 })));
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
      expect(results.find((r) => r.status === 409)!.body).toEqual({ detail: 'approval policy revision changed' });
      expect(await revisionRows(op.workspaceId)).toBe(2);
    });

    it('answers 409 for a name another policy holds', async () => {
      const op = await freshOwner();
      await create(op, { name: 'taken', rules: [allow()] }).expect(200);
      const other = (await create(op, { name: 'other', rules: [allow()] }).expect(200)).body;
      await revise(op, other.policy_id, { name: 'taken', rules: [allow()], expected_revision: 1 }).expect(409, { detail: 'approval policy name already exists' });
      await revise(op, other.policy_id, { name: 'other', rules: [allow({ quorum: 2 })], expected_revision: 1 }).expect(200);
    });

    it('answers 422 expected_revision is required, and for a revision below 1 or rule failures', async () => {
      const created = (await create(owner, { name: uniqueName(), rules: [allow()] }).expect(200)).body;
      for (const body of [{ name: 'x', rules: [allow()] }, { name: 'x', rules: [allow()], expected_revision: null }]) {
        const res = await revise(owner, created.policy_id, body).expect(422);
        expect(res.body).toEqual({ detail: [{ loc: ['body', 'expected_revision'], msg: 'expected_revision is required', type: 'missing' }] });
      }
      for (const expected of [0, -1, 1.5, '1']) {
        const res = await revise(owner, created.policy_id, { name: 'x', rules: [allow()], expected_revision: expected }).expect(422);
        expect(res.body.detail[0].loc).toEqual(['body', 'expected_revision']);
      }
      const rules = await revise(owner, created.policy_id, { name: 'x', rules: [allow({ quorum: 5 })], expected_revision: 1 }).expect(422);
      expect(rules.body.detail).toEqual([{ loc: ['body', 'rules', 0, 'quorum'], msg: 'quorum must be 1 or 2', type: 'value_error' }]);
    });

    it('answers 409 approval policy is disabled for a disabled policy', async () => {
      const op = await freshOwner();
      const created = (await create(op, { name: 'p', rules: [allow()] }).expect(200)).body;
      await disable(op, created.policy_id, { expected_revision: 1 }).expect(200);
      await revise(op, created.policy_id, { name: 'p', rules: [allow()], expected_revision: 1 }).expect(409, { detail: 'approval policy is disabled' });
    });
  });

  describe('disable', () => {
    it('disables the policy at its revision, keeps it and its revisions, audits and stages a snapshot that drops its rules', async () => {
      const op = await freshOwner();
      const created = (await create(op, { name: 'p', rules: [allow()] }).expect(200)).body;
      const version = await snapshotVersion(op.workspaceId);
      const res = await disable(op, created.policy_id, { expected_revision: 1 }).expect(200);
      expect(res.body).toMatchObject({ policy_id: created.policy_id, status: 'disabled', revision: 1, revision_id: created.revision_id, rules: created.rules });
      expect(await snapshotVersion(op.workspaceId)).toBe(version + 1);
      expect(await auditRows(op.workspaceId, 'approval_policy.disable')).toBe(1);
      expect(await revisionRows(op.workspaceId)).toBe(1);
      const part = (await t.app.get(PublicationService).build(op.workspaceId))!.approval_rules as { rules: unknown[] };
      expect(part.rules).toEqual([]);
      // Disabling again changes nothing.
      await disable(op, created.policy_id, { expected_revision: 1 }).expect(200);
      expect(await auditRows(op.workspaceId, 'approval_policy.disable')).toBe(1);
      expect(await snapshotVersion(op.workspaceId)).toBe(version + 1);
    });

    it('answers 409 for a stale revision and 422 when expected_revision is missing or below 1', async () => {
      const op = await freshOwner();
      const created = (await create(op, { name: 'p', rules: [allow()] }).expect(200)).body;
      await disable(op, created.policy_id, { expected_revision: 2 }).expect(409, { detail: 'approval policy revision changed' });
      const missing = await disable(op, created.policy_id, {}).expect(422);
      expect(missing.body).toEqual({ detail: [{ loc: ['body', 'expected_revision'], msg: 'expected_revision is required', type: 'missing' }] });
      await disable(op, created.policy_id, { expected_revision: 0 }).expect(422);
      await disable(op, created.policy_id, { expected_revision: 1, reason: 'x' }).expect(422);
      const [row] = await t.db.query(`SELECT status FROM approval_policies WHERE id = $1`, [created.policy_id]);
      expect(row.status).toBe('active');
    });
  });

  describe('authorization', () => {
    let policyId: string;
    beforeAll(async () => {
      policyId = (await create(owner, { name: uniqueName(), rules: [allow()] }).expect(200)).body.policy_id;
    });

    const routes = () => [
      { read: true, call: (op: Operator | null, ws: string) => t.http().get(base(ws)).set(op ? bearer(op) : {}) },
      { read: true, call: (op: Operator | null, ws: string) => t.http().get(`${base(ws)}/${policyId}`).set(op ? bearer(op) : {}) },
      { read: false, call: (op: Operator | null, ws: string) => t.http().post(base(ws)).set(op ? bearer(op) : {}).send({ name: uniqueName(), rules: [allow()] }) },
      { read: false, call: (op: Operator | null, ws: string) => t.http().put(`${base(ws)}/${policyId}`).set(op ? bearer(op) : {}).send({ name: 'n', rules: [allow()], expected_revision: 99 }) },
      { read: false, call: (op: Operator | null, ws: string) => t.http().post(`${base(ws)}/${policyId}/disable`).set(op ? bearer(op) : {}).send({ expected_revision: 99 }) },
    ];

    it('answers 401 session required without a session', async () => {
      for (const route of routes()) await route.call(null, owner.workspaceId).expect(401, { detail: 'session required' });
    });

    it('answers 404 workspace not found to a non-member exactly as for a nonexistent workspace', async () => {
      for (const route of routes()) {
        const a = await route.call(outsider, owner.workspaceId).expect(404);
        const b = await route.call(owner, 'ws_000000000000000000000000').expect(404);
        expect(a.body).toEqual({ detail: 'workspace not found' });
        expect(b.body).toEqual(a.body);
      }
    });

    it('lets a viewer read and answers 403 action not permitted to an admin or viewer managing', async () => {
      const before = await policyRows(owner.workspaceId);
      for (const route of routes()) {
        if (route.read) await route.call(viewer, owner.workspaceId).expect(200);
        else for (const op of [admin, viewer]) await route.call(op, owner.workspaceId).expect(403, { detail: 'action not permitted' });
      }
      expect(await policyRows(owner.workspaceId)).toBe(before);
    });

    it('answers 409 workspace is frozen to every mutation and still serves reads', async () => {
      const op = await freshOwner();
      policyId = (await create(op, { name: 'p', rules: [allow()] }).expect(200)).body.policy_id;
      await freezeWorkspace(t, op.workspaceId);
      for (const route of routes()) {
        if (route.read) await route.call(op, op.workspaceId).expect(200);
        else await route.call(op, op.workspaceId).expect(409, { detail: 'workspace is frozen' });
      }
      expect(await policyRows(op.workspaceId)).toBe(1);
    });
  });
});
