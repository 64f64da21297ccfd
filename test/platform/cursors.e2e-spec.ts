import { createHash, randomBytes } from 'node:crypto';
import { cursorMac } from 'src/common/pagination/cursor';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { GatewayStreams, receiptRevision, usageEvent } from 'test/support/streams';

/** A cursor of the landed format whose `c` is `mac` (what a client could compute without our key). */
function forged(json: string, mac: string): string {
  return Buffer.from(`${json.slice(0, -1)},"c":"${mac}"}`).toString('base64url');
}

/** Cursors are signed by control and bound to the list and workspace that issued them (issue 17, item 10). */
describe('list cursors', () => {
  let t: TestApp;
  let streams: GatewayStreams;
  let alice: Operator;
  let bob: Operator;
  const WINDOW = { from: '2020-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' };
  beforeAll(async () => {
    t = await startTestApp();
    streams = new GatewayStreams(t);
    alice = await t.signIn('alice');
    bob = await t.signIn('bob');
    for (const op of [alice, bob]) {
      for (let i = 0; i < 3; i++) {
        await t.http().post(`/api/v1/workspaces/${op.workspaceId}/keys`).set(bearer(op)).send({ agent_id: `agent-${i}` }).expect(201);
      }
      await streams.add('receipts', ...Array.from({ length: 3 }, () => receiptRevision(op.workspaceId)));
      await streams.add('usage', ...['key_a', 'key_b', 'key_c'].map((key_id) => usageEvent(op.workspaceId, { key_id })));
    }
    await streams.pass('receipts');
    await streams.pass('usage');
  });
  afterAll(async () => {
    streams.close();
    await t.close();
  });

  const get = (op: Operator, path: string, query: Record<string, string | number>, ws = op.workspaceId) =>
    t.http().get(`/api/v1/workspaces/${ws}${path}`).query(query).set(bearer(op));

  const lists = [
    { name: 'audit', path: '/audit', query: { ...WINDOW, limit: 1 }, items: 'events', refusal: 422 },
    { name: 'receipts', path: '/receipts', query: { limit: 1 }, items: 'receipts', refusal: 400 },
    { name: 'usage', path: '/usage', query: { ...WINDOW, group_by: 'key', limit: 1 }, items: 'groups', refusal: 422 },
  ] as const;

  it.each(lists)('$name: a cursor pages its own workspace and is refused in another', async ({ path, query, items, refusal }) => {
    const first = await get(alice, path, query).expect(200);
    const cursor: string = first.body.next_cursor;
    expect(cursor).toEqual(expect.any(String));
    const second = await get(alice, path, { ...query, cursor }).expect(200);
    expect(second.body[items]).toHaveLength(1);
    expect(second.body[items][0]).not.toEqual(first.body[items][0]);

    // Bob replays Alice's cursor on his own workspace: refused, nothing of either workspace listed.
    const replayed = await get(bob, path, { ...query, cursor }).expect(refusal);
    expect(replayed.body[items]).toBeUndefined();
    // Alice, made a member of Bob's workspace, cannot carry her workspace's cursor there either.
    await t.http().put(`/api/v1/workspaces/${bob.workspaceId}/members/${alice.userId}`).set(bearer(bob)).send({ role: 'viewer' }).expect(200);
    await get(alice, path, { ...query, cursor }, bob.workspaceId).expect(refusal);
  });

  it('refuses cursors forged without control\'s key: the former unkeyed checksum, a guessed key, and an edited position', async () => {
    const json = `{"v":2,"at":"2099-01-01T00:00:00.000Z","id":"aud_000000000000000000000000"}`;
    const candidates = [
      forged(json, createHash('sha256').update(json).digest('hex').slice(0, 32)),
      forged(json, cursorMac(randomBytes(32), `audit:${alice.workspaceId}`, json)),
      forged(`{"v":1,"at":"2099-01-01T00:00:00.000Z","id":"aud_000000000000000000000000"}`, createHash('sha256').update(json).digest('hex').slice(0, 16)),
    ];
    const issued: string = (await get(alice, '/audit', { ...WINDOW, limit: 1 }).expect(200)).body.next_cursor;
    const decoded = JSON.parse(Buffer.from(issued, 'base64url').toString());
    candidates.push(Buffer.from(JSON.stringify({ ...decoded, id: 'aud_zzzzzzzzzzzzzzzzzzzzzzzz' })).toString('base64url'));
    for (const cursor of candidates) {
      const res = await get(alice, '/audit', { ...WINDOW, cursor }).expect(422);
      expect(res.body).toEqual({ detail: [expect.objectContaining({ loc: ['query', 'cursor'], msg: 'invalid cursor' })] });
    }
  });
});
