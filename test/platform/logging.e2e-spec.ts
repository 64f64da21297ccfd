import { bearer, startTestApp, TestApp } from 'test/support/app';
import { GatewayStreams, receiptRevision } from 'test/support/streams';

describe('structured access log', () => {
  let t: TestApp;
  const lines: string[] = [];
  let write: typeof process.stdout.write;
  beforeAll(async () => {
    t = await startTestApp({ LOG_LEVEL: 'info' });
    write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
  });
  afterAll(async () => {
    process.stdout.write = write;
    await t.close();
  });

  it('writes one JSON line per request with method, path template, status, duration and request id, never a token or a body', async () => {
    const op = await t.signIn('logger');
    lines.length = 0;
    await t.http().post('/api/v1/workspaces').set(bearer(op)).set('X-Request-Id', 'req_trace-1').send({ org_id: op.orgId, slug: 'secret-slug-value' }).expect(201);
    await t.http().get(`/api/v1/workspaces/${op.workspaceId}/members`).set(bearer(op)).expect(200);
    await t.http().get('/api/v1/me').set('Authorization', 'Bearer not-a-token-but-secret').expect(401);
    const access = lines.map((l) => JSON.parse(l)).filter((l) => l.context === 'access');
    expect(access).toEqual([
      expect.objectContaining({ level: 'info', msg: 'request', method: 'POST', route: '/api/v1/workspaces', status: 201, duration_ms: expect.any(Number), request_id: 'req_trace-1' }),
      expect.objectContaining({ method: 'GET', route: '/api/v1/workspaces/:ws/members', status: 200, request_id: expect.stringMatching(/^req_/) }),
      expect.objectContaining({ method: 'GET', route: '/api/v1/me', status: 401 }),
    ]);
    const all = lines.join('');
    expect(all).not.toContain(op.token);
    expect(all).not.toContain('not-a-token-but-secret');
    expect(all).not.toContain('secret-slug-value');
    expect(all).not.toContain(op.workspaceId);
  });

  it('echoes the request id in the response', async () => {
    const res = await t.http().get('/healthz').set('X-Request-Id', 'req_abc').expect(200);
    expect(res.headers['x-request-id']).toBe('req_abc');
    const generated = await t.http().get('/healthz').set('X-Request-Id', 'bad id with spaces').expect(200);
    expect(generated.headers['x-request-id']).toMatch(/^req_[0-9a-f]{24}$/);
  });

  it('answers an unexpected failure 500 internal_error, logging the error kind but never its message', async () => {
    const op = await t.signIn();
    // A table the key list reads, gone: the database error is unexpected for the service.
    await t.db.query(`ALTER TABLE virtual_keys RENAME TO virtual_keys_hidden`);
    lines.length = 0;
    try {
      const res = await t.http().get(`/api/v1/workspaces/${op.workspaceId}/keys`).set(bearer(op));
      expect([res.status, res.body]).toEqual([500, { error: { code: 'internal_error', message: 'internal server error' } }]);
    } finally {
      await t.db.query(`ALTER TABLE virtual_keys_hidden RENAME TO virtual_keys`);
    }
    const logged = lines.map((l) => JSON.parse(l));
    expect(logged).toContainEqual(expect.objectContaining({ level: 'error', msg: 'unhandled error', error: 'DatabaseError', code: '42P01', stack: expect.stringMatching(/^\s*at /) }));
    expect(lines.join('')).not.toContain('does not exist');
    expect(logged).toContainEqual(expect.objectContaining({ context: 'access', route: '/api/v1/workspaces/:ws/keys', status: 500 }));
  });

  it('logs a background failure by its kind and code, never its message (a rolled-back workspace batch of the stream consumer)', async () => {
    const op = await t.signIn();
    const gw = new GatewayStreams(t);
    await t.db.query(`
      CREATE FUNCTION fail_for_logging() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused value sk-live-secret'; END $$;
      CREATE TRIGGER fail_for_logging BEFORE INSERT ON receipt_heads FOR EACH ROW EXECUTE FUNCTION fail_for_logging();`);
    lines.length = 0;
    try {
      await gw.add('receipts', receiptRevision(op.workspaceId));
      expect(await gw.pass('receipts')).toMatchObject({ projected: 0, failed: 1 });
    } finally {
      await t.db.query(`DROP TRIGGER fail_for_logging ON receipt_heads; DROP FUNCTION fail_for_logging();`);
      gw.close();
    }
    expect(lines.map((l) => JSON.parse(l))).toContainEqual(
      expect.objectContaining({ level: 'warn', context: 'streams', msg: 'workspace batch rolled back; its entries stay pending', error: 'QueryFailedError', code: 'P0001' }),
    );
    expect(lines.join('')).not.toContain('sk-live-secret');
  });
});
