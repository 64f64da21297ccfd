import { createClient, RedisClientType } from 'redis';
import { signServiceToken } from 'src/platform/auth/service-token';
import { expectAccessMatrix, roleMembers } from 'test/support/access-matrix';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { corruptRouteQualifiers, loseSnapshotVersion, renameRouteQualifiersUnsafely, stageSnapshotVersion } from 'test/support/factories';

describe('route qualifiers', () => {
  let t: TestApp;
  let redis: RedisClientType;
  let owner: Operator;

  beforeAll(async () => {
    t = await startTestApp();
    redis = createClient({ url: REDIS_URL });
    await redis.connect();
    owner = await t.signIn();
  });
  afterAll(async () => {
    redis.destroy();
    await t.close();
  });

  const path = (ws: string) => `/api/v1/workspaces/${ws}/route-qualifiers`;
  const upsert = (op: Operator, body: unknown, ws = op.workspaceId) => t.http().post(path(ws)).set(bearer(op)).send(body as object);
  const list = (op: Operator, ws = op.workspaceId) => t.http().get(path(ws)).set(bearer(op));
  const remove = (op: Operator, id: string, query = '', ws = op.workspaceId) => t.http().delete(`${path(ws)}/${encodeURIComponent(id)}${query}`).set(bearer(op));
  const audits = async (ws: string) =>
    t.db.query(`SELECT action, target, detail FROM audit_events WHERE workspace_id = $1 AND action LIKE 'route_qualifier.%' ORDER BY occurred_at, id`, [ws]);
  const stored = async (ws: string) => t.db.query(`SELECT qualifier_id, revision FROM route_qualifiers WHERE workspace_id = $1 ORDER BY qualifier_id`, [ws]);
  const internalSnapshot = async (ws: string) =>
    t.http().get(`/internal/v1/workspaces/${ws}/snapshot`).set('Authorization', `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}`);
  const published = async (ws: string) => JSON.parse((await redis.get(`${t.config.redisPrefix}:snapshot:${ws}`)) ?? 'null');
  const versions = async (ws: string) => (await t.db.query(`SELECT snapshot_version, published_version FROM workspaces WHERE id = $1`, [ws]))[0];

  const full = {
    qualifier_id: 'crm-writes',
    capability_id: 'cap.crm.contact.create',
    constraint: { kind: 'only', targets: ['hubspot.create_contact@native', 'salesforce.create_contact@broker_a'] },
    prefer_auth: ['oauth2', 'api_key'],
    prefer_surface: ['mcp'],
    prefer_sources: ['native', 'broker_b'],
    min_quality: 7500,
    max_cost_micros_usd: 2500,
    allow_fallbacks: true,
  };

  describe('upsert', () => {
    it('creates with defaults: revision 1, constraint none, empty preferences, no capability', async () => {
      const op = await t.signIn();
      const before = await versions(op.workspaceId);
      const res = await upsert(op, { qualifier_id: 'default' }).expect(200);
      expect(res.body).toEqual({
        schema_version: 1,
        workspace_id: op.workspaceId,
        qualifier_id: 'default',
        revision: 1,
        constraint: { kind: 'none' },
        prefer_auth: [],
        prefer_surface: [],
        prefer_sources: [],
        min_quality: 0,
        max_cost_micros_usd: null,
        allow_fallbacks: false,
        deleted: false,
        publication: { state: 'published', requested_version: before.snapshot_version + 1, published_version: before.snapshot_version + 1 },
      });
      expect(await audits(op.workspaceId)).toEqual([
        { action: 'route_qualifier.upsert', target: 'default', detail: { qualifier_id: 'default', snapshot_version: before.snapshot_version + 1 } },
      ]);
    });

    it('stores every field, lists it, and publishes it with max_cost in the snapshot', async () => {
      const op = await t.signIn();
      const res = await upsert(op, full).expect(200);
      const { qualifier_id, ...rest } = full;
      expect(res.body).toEqual({ schema_version: 1, workspace_id: op.workspaceId, qualifier_id, revision: 1, ...rest, deleted: false, publication: expect.any(Object) });
      expect((await list(op).expect(200)).body).toEqual({ qualifiers: [res.body] });
      const entry = {
        qualifier_id: 'crm-writes',
        revision: 1,
        capability_id: 'cap.crm.contact.create',
        constraint: full.constraint,
        prefer_auth: full.prefer_auth,
        prefer_surface: full.prefer_surface,
        prefer_sources: full.prefer_sources,
        min_quality: 7500,
        max_cost: 2500,
        allow_fallbacks: true,
      };
      expect((await published(op.workspaceId)).route_qualifiers).toEqual([entry]);
      expect((await internalSnapshot(op.workspaceId)).body.route_qualifiers).toEqual([entry]);
    });

    it('stores each constraint kind', async () => {
      const op = await t.signIn();
      const kinds = [{ kind: 'none' }, { kind: 'only', targets: ['a'] }, { kind: 'ignore', targets: ['b', 'c'] }, { kind: 'pin', target: 'd' }, { kind: 'only', targets: [] }];
      for (const [i, constraint] of kinds.entries()) {
        expect((await upsert(op, { qualifier_id: `k${i}`, constraint }).expect(200)).body.constraint).toEqual(constraint);
      }
      expect((await published(op.workspaceId)).route_qualifiers.map((q: { constraint: unknown }) => q.constraint)).toEqual(kinds);
    });

    it('updates with the stored expected_revision: revision + 1, every field replaced', async () => {
      const op = await t.signIn();
      await upsert(op, full).expect(200);
      const res = await upsert(op, { qualifier_id: 'crm-writes', expected_revision: 1, constraint: { kind: 'pin', target: 'x@native' } }).expect(200);
      expect(res.body).toMatchObject({ revision: 2, constraint: { kind: 'pin', target: 'x@native' }, prefer_auth: [], min_quality: 0, max_cost_micros_usd: null, allow_fallbacks: false });
      expect(res.body).not.toHaveProperty('capability_id');
      expect((await upsert(op, { qualifier_id: 'crm-writes', expected_revision: 2 }).expect(200)).body.revision).toBe(3);
      expect((await audits(op.workspaceId)).map((a: { action: string }) => a.action)).toEqual(['route_qualifier.upsert', 'route_qualifier.upsert', 'route_qualifier.upsert']);
    });

    it('answers 409 route_qualifier_revision_conflict for a stale revision, a create over an existing row, or a revision on a missing row', async () => {
      const op = await t.signIn();
      await upsert(op, { qualifier_id: 'q' }).expect(200);
      const before = await versions(op.workspaceId);
      for (const body of [{ qualifier_id: 'q' }, { qualifier_id: 'q', expected_revision: 2 }, { qualifier_id: 'missing', expected_revision: 1 }]) {
        expect((await upsert(op, body).expect(409)).body).toEqual({ detail: 'route_qualifier_revision_conflict' });
      }
      expect(await stored(op.workspaceId)).toEqual([{ qualifier_id: 'q', revision: 1 }]);
      expect(await audits(op.workspaceId)).toHaveLength(1);
      expect(await versions(op.workspaceId)).toEqual(before);
    });

    it('holds at most 32 qualifiers: the 33rd is 409 route_qualifier_limit_reached, updates and deletes still work', async () => {
      const op = await t.signIn();
      for (let i = 0; i < 32; i++) await upsert(op, { qualifier_id: `q${String(i).padStart(2, '0')}` }).expect(200);
      expect((await upsert(op, { qualifier_id: 'q32' }).expect(409)).body).toEqual({ detail: 'route_qualifier_limit_reached' });
      expect(await stored(op.workspaceId)).toHaveLength(32);
      await upsert(op, { qualifier_id: 'q00', expected_revision: 1 }).expect(200);
      await remove(op, 'q00').expect(200);
      await upsert(op, { qualifier_id: 'q32' }).expect(200);
      expect(await stored(op.workspaceId)).toHaveLength(32);
    });

    it('accepts the field limits exactly', async () => {
      const op = await t.signIn();
      const body = {
        qualifier_id: 'a'.repeat(128),
        capability_id: `cap.${'\u{1F600}'.repeat(252)}`,
        constraint: { kind: 'ignore', targets: Array.from({ length: 32 }, (_, i) => `${i}`.padEnd(256, 'x')) },
        prefer_auth: Array.from({ length: 8 }, () => 'api_key'),
        prefer_surface: Array.from({ length: 8 }, () => 'rest'),
        prefer_sources: Array.from({ length: 8 }, () => 'broker_a'),
        min_quality: 10000,
        max_cost_micros_usd: Number.MAX_SAFE_INTEGER,
      };
      const res = await upsert(op, body).expect(200);
      expect(res.body).toMatchObject(body);
      await upsert(op, { qualifier_id: '0-_z', min_quality: 0, max_cost_micros_usd: 0, capability_id: 'cap.x' }).expect(200);
    });
  });

  describe('upsert validation (nothing written)', () => {
    let op: Operator;
    beforeAll(async () => {
      op = await t.signIn();
    });
    afterEach(async () => {
      expect(await stored(op.workspaceId)).toEqual([]);
      expect(await audits(op.workspaceId)).toEqual([]);
    });

    it('answers 400 for a qualifier_id outside [a-z0-9_-]', async () => {
      for (const id of ['Upper', 'dot.ted', 'sp ace', 'ü']) {
        expect((await upsert(op, { qualifier_id: id }).expect(400)).body).toEqual({ detail: 'qualifier_id must be [a-z0-9_-]' });
      }
    });

    it('answers 400 for a capability_id without the cap prefix, an empty tool segment or a line terminator', async () => {
      for (const capability_id of ['crm.contact', 'cap.', 'cap', 'CAP.x', '', 'cap.x\ny', 'cap.x\r', 'cap.x\u2028']) {
        expect((await upsert(op, { qualifier_id: 'q', capability_id }).expect(400)).body).toEqual({ detail: 'capability_id must use the cap prefix' });
      }
    });

    const refused = async (body: object, detail: { loc: (string | number)[]; type: string; msg?: string }[]) => {
      const res = await upsert(op, { qualifier_id: 'q', ...body }).expect(422);
      expect(res.body.detail).toEqual(detail.map((d) => ({ msg: expect.any(String), ...d })));
    };

    it('requires qualifier_id, 1-128 characters', async () => {
      expect((await upsert(op, {}).expect(422)).body.detail).toEqual([{ loc: ['body', 'qualifier_id'], msg: 'field required', type: 'missing' }]);
      await refused({ qualifier_id: '' }, [{ loc: ['body', 'qualifier_id'], type: 'string_too_short' }]);
      await refused({ qualifier_id: 'a'.repeat(129) }, [{ loc: ['body', 'qualifier_id'], type: 'string_too_long' }]);
      await refused({ qualifier_id: 5 }, [{ loc: ['body', 'qualifier_id'], type: 'string_type' }]);
    });
    it('refuses unknown fields (including deleted and publication)', () =>
      refused({ weight: 1, deleted: true }, [
        { loc: ['body', 'weight'], msg: 'extra fields not permitted', type: 'extra_forbidden' },
        { loc: ['body', 'deleted'], msg: 'extra fields not permitted', type: 'extra_forbidden' },
      ]));
    it('refuses a capability_id over 256 code points', () =>
      refused({ capability_id: `cap.${'x'.repeat(253)}` }, [{ loc: ['body', 'capability_id'], type: 'string_too_long' }]));
    it('refuses an expected_revision below 1', () => refused({ expected_revision: 0 }, [{ loc: ['body', 'expected_revision'], type: 'greater_than_equal' }]));
    it('refuses an unknown or missing constraint kind', async () => {
      await refused({ constraint: { kind: 'prefer' } }, [{ loc: ['body', 'constraint', 'kind'], type: 'enum' }]);
      await refused({ constraint: { targets: ['a'] } }, [{ loc: ['body', 'constraint', 'kind'], msg: 'field required', type: 'missing' }]);
      await refused({ constraint: ['only'] }, [{ loc: ['body', 'constraint'], type: 'dict_type' }]);
    });
    it('refuses constraint fields that do not belong to the kind', async () => {
      await refused({ constraint: { kind: 'none', targets: [] } }, [{ loc: ['body', 'constraint', 'targets'], type: 'extra_forbidden' }]);
      await refused({ constraint: { kind: 'pin', target: 'a', targets: ['a'] } }, [{ loc: ['body', 'constraint', 'targets'], type: 'extra_forbidden' }]);
      await refused({ constraint: { kind: 'only', target: 'a' } }, [
        { loc: ['body', 'constraint', 'target'], type: 'extra_forbidden' },
        { loc: ['body', 'constraint', 'targets'], msg: 'field required', type: 'missing' },
      ]);
    });
    it('refuses targets outside 32 entries of 1-256 characters', async () => {
      await refused({ constraint: { kind: 'only', targets: Array.from({ length: 33 }, () => 'a') } }, [{ loc: ['body', 'constraint', 'targets'], type: 'too_long' }]);
      await refused({ constraint: { kind: 'ignore', targets: ['ok', '', 'x'.repeat(257), 3] } }, [
        { loc: ['body', 'constraint', 'targets', 1], type: 'string_too_short' },
        { loc: ['body', 'constraint', 'targets', 2], type: 'string_too_long' },
        { loc: ['body', 'constraint', 'targets', 3], type: 'string_type' },
      ]);
      await refused({ constraint: { kind: 'only', targets: 'a' } }, [{ loc: ['body', 'constraint', 'targets'], type: 'list_type' }]);
      await refused({ constraint: { kind: 'pin' } }, [{ loc: ['body', 'constraint', 'target'], msg: 'field required', type: 'missing' }]);
      await refused({ constraint: { kind: 'pin', target: 'x'.repeat(257) } }, [{ loc: ['body', 'constraint', 'target'], type: 'string_too_long' }]);
    });
    it('refuses preference lists with unknown values or more than 8 entries', async () => {
      await refused({ prefer_auth: ['password'] }, [{ loc: ['body', 'prefer_auth'], type: 'enum' }]);
      await refused({ prefer_surface: ['grpc'] }, [{ loc: ['body', 'prefer_surface'], type: 'enum' }]);
      await refused({ prefer_sources: ['broker_c'] }, [{ loc: ['body', 'prefer_sources'], type: 'enum' }]);
      await refused({ prefer_auth: Array.from({ length: 9 }, () => 'oauth2') }, [{ loc: ['body', 'prefer_auth'], type: 'too_long' }]);
      await refused({ prefer_sources: 'native' }, [{ loc: ['body', 'prefer_sources'], type: 'list_type' }]);
    });
    it('refuses min_quality outside 0-10000, a negative or imprecise max cost, and a non-boolean allow_fallbacks', async () => {
      await refused({ min_quality: 10001 }, [{ loc: ['body', 'min_quality'], type: 'less_than_equal' }]);
      await refused({ min_quality: -1 }, [{ loc: ['body', 'min_quality'], type: 'greater_than_equal' }]);
      await refused({ min_quality: 0.5 }, [{ loc: ['body', 'min_quality'], type: 'int_type' }]);
      await refused({ max_cost_micros_usd: -1 }, [{ loc: ['body', 'max_cost_micros_usd'], type: 'greater_than_equal' }]);
      await refused({ max_cost_micros_usd: 2 ** 63 }, [{ loc: ['body', 'max_cost_micros_usd'], type: 'less_than_equal' }]);
      await refused({ allow_fallbacks: 'yes' }, [{ loc: ['body', 'allow_fallbacks'], type: 'bool_type' }]);
    });
  });

  describe('list', () => {
    it('answers an empty list, then every qualifier ordered by qualifier_id', async () => {
      const op = await t.signIn();
      expect((await list(op).expect(200)).body).toEqual({ qualifiers: [] });
      for (const id of ['b', 'a_1', 'a-1', '0', 'a']) await upsert(op, { qualifier_id: id }).expect(200);
      const res = await list(op).expect(200);
      expect(res.body.qualifiers.map((q: { qualifier_id: string }) => q.qualifier_id)).toEqual(['0', 'a', 'a-1', 'a_1', 'b']);
      const v = await versions(op.workspaceId);
      for (const q of res.body.qualifiers) expect(q.publication).toEqual({ state: 'published', requested_version: v.snapshot_version, published_version: v.published_version });
      expect((await published(op.workspaceId)).route_qualifiers.map((q: { qualifier_id: string }) => q.qualifier_id)).toEqual(['0', 'a', 'a-1', 'a_1', 'b']);
    });

    it('answers 500 route_qualifier_payload_invalid for a stored row with more than one active constraint; the snapshot is unavailable', async () => {
      const op = await t.signIn();
      await upsert(op, { qualifier_id: 'broken', constraint: { kind: 'pin', target: 'a' } }).expect(200);
      await corruptRouteQualifiers(t, op.workspaceId, ['b']);
      expect((await list(op).expect(500)).body).toEqual({
        error: { code: 'route_qualifier_payload_invalid', message: 'stored route qualifier is invalid', qualifier_id: 'broken' },
      });
      // The version already published is kept and still served; a newly staged one cannot be built.
      await stageSnapshotVersion(t, op.workspaceId);
      expect((await internalSnapshot(op.workspaceId)).body).toEqual({ detail: 'snapshot_unavailable' });
      expect((await internalSnapshot(op.workspaceId)).status).toBe(503);
      // An unsafe stored id is not echoed.
      await renameRouteQualifiersUnsafely(t, op.workspaceId);
      expect((await list(op).expect(500)).body).toEqual({ error: { code: 'route_qualifier_payload_invalid', message: 'stored route qualifier is invalid' } });
    });

    it('answers 500 when the publication state cannot be read', async () => {
      const op = await t.signIn();
      await loseSnapshotVersion(t, op.workspaceId);
      expect((await list(op).expect(500)).body).toEqual({ detail: 'workspace publication state is unavailable' });
    });
  });

  describe('delete', () => {
    it('removes the qualifier and answers the tombstone with the revision held at removal', async () => {
      const op = await t.signIn();
      await upsert(op, full).expect(200);
      await upsert(op, { ...full, expected_revision: 1 }).expect(200);
      const before = await versions(op.workspaceId);
      const res = await remove(op, 'crm-writes').expect(200);
      expect(res.body).toEqual({
        schema_version: 1,
        workspace_id: op.workspaceId,
        qualifier_id: 'crm-writes',
        revision: 2,
        deleted: true,
        publication: { state: 'published', requested_version: before.snapshot_version + 1, published_version: before.snapshot_version + 1 },
      });
      expect(await stored(op.workspaceId)).toEqual([]);
      expect((await published(op.workspaceId)).route_qualifiers).toEqual([]);
      expect((await audits(op.workspaceId)).slice(-1)).toEqual([
        { action: 'route_qualifier.delete', target: 'crm-writes', detail: { qualifier_id: 'crm-writes', snapshot_version: before.snapshot_version + 1 } },
      ]);
      // A later create starts again at revision 1.
      expect((await upsert(op, { qualifier_id: 'crm-writes' }).expect(200)).body.revision).toBe(1);
    });

    it('checks an optional expected_revision: 409 on mismatch, 422 below 1, deletes on match', async () => {
      const op = await t.signIn();
      await upsert(op, { qualifier_id: 'q' }).expect(200);
      expect((await remove(op, 'q', '?expected_revision=2').expect(409)).body).toEqual({ detail: 'route_qualifier_revision_conflict' });
      expect((await remove(op, 'q', '?expected_revision=0').expect(422)).body.detail).toEqual([
        { loc: ['query', 'expected_revision'], msg: expect.any(String), type: 'greater_than_equal' },
      ]);
      expect((await remove(op, 'q', '?expected_revision=x').expect(422)).body.detail[0].loc).toEqual(['query', 'expected_revision']);
      expect(await stored(op.workspaceId)).toEqual([{ qualifier_id: 'q', revision: 1 }]);
      expect((await remove(op, 'q', '?expected_revision=1').expect(200)).body).toMatchObject({ deleted: true, revision: 1 });
    });

    it('answers 404 qualifier not found for an unknown id (and for another workspace\'s), 400 for a malformed id', async () => {
      const op = await t.signIn();
      const other = await t.signIn();
      await upsert(other, { qualifier_id: 'theirs' }).expect(200);
      expect((await remove(op, 'theirs').expect(404)).body).toEqual({ detail: 'qualifier not found' });
      expect((await remove(op, 'nope').expect(404)).body).toEqual({ detail: 'qualifier not found' });
      expect((await remove(op, 'Bad.Id').expect(400)).body).toEqual({ detail: 'qualifier_id must be [a-z0-9_-]' });
      expect(await stored(other.workspaceId)).toEqual([{ qualifier_id: 'theirs', revision: 1 }]);
      expect(await audits(op.workspaceId)).toEqual([]);
    });
  });

  describe('concurrency', () => {
    it('lets exactly one of several updates at the same expected_revision win', async () => {
      const op = await t.signIn();
      await upsert(op, { qualifier_id: 'hot' }).expect(200);
      const results = await Promise.all(Array.from({ length: 5 }, (_, i) => upsert(op, { qualifier_id: 'hot', expected_revision: 1, min_quality: i })));
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
      expect(await stored(op.workspaceId)).toEqual([{ qualifier_id: 'hot', revision: 2 }]);
    });

    it('lets exactly one of several creates of the same id win', async () => {
      const op = await t.signIn();
      const results = await Promise.all(Array.from({ length: 5 }, () => upsert(op, { qualifier_id: 'same' })));
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
      expect(await audits(op.workspaceId)).toHaveLength(1);
    });

    it('never exceeds 32 under concurrent creates', async () => {
      const op = await t.signIn();
      for (let i = 0; i < 30; i++) await upsert(op, { qualifier_id: `base${i}` }).expect(200);
      const results = await Promise.all(Array.from({ length: 5 }, (_, i) => upsert(op, { qualifier_id: `race${i}` })));
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 409, 409, 409]);
      expect(results.filter((r) => r.status === 409).map((r) => r.body)).toEqual(Array.from({ length: 3 }, () => ({ detail: 'route_qualifier_limit_reached' })));
      expect(await stored(op.workspaceId)).toHaveLength(32);
    });
  });

  describe('authorization', () => {
    it('GET: any member reads; frozen still reads', async () => {
      await expectAccessMatrix(t, owner, await roleMembers(t, owner), { method: 'get', path, minRole: 'viewer', read: true });
    });
    it('POST needs routing.publish (admin)', async () => {
      await expectAccessMatrix(t, owner, await roleMembers(t, owner), { method: 'post', path, body: { qualifier_id: 'm' }, minRole: 'admin', read: false });
      expect(await stored(owner.workspaceId)).toEqual([]);
    });
    it('DELETE needs routing.publish (admin)', async () => {
      await upsert(owner, { qualifier_id: 'kept' }).expect(200);
      await expectAccessMatrix(t, owner, await roleMembers(t, owner), { method: 'delete', path: (ws) => `${path(ws)}/kept`, minRole: 'admin', read: false });
      expect(await stored(owner.workspaceId)).toEqual([{ qualifier_id: 'kept', revision: 1 }]);
    });
  });
});
