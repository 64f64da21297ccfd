import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { HandshakesRepository } from 'src/modules/connections/handshakes.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { SeededWorkspace, seedWorkspace } from 'test/connections/db-seed';

describe('HandshakesRepository', () => {
  let db: RepositoryDatabase;
  let repo: HandshakesRepository;
  let connections: ConnectionsRepository;
  let ws: SeededWorkspace;
  let connectionId: string;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new HandshakesRepository(db.dataSource);
    connections = new ConnectionsRepository(db.dataSource);
  });
  beforeEach(async () => {
    ws = await seedWorkspace(db.dataSource);
    connectionId = await connections.insert(db.dataSource.manager, {
      workspaceId: ws.workspaceId,
      kind: 'tool',
      connectorSlug: 'github',
      source: 'broker_a',
      custody: 'federated',
      target: 'broker',
      authProfile: { type: 'federated', provider: 'broker_a', upstream_id: 'gh', broker_connection_id: 'conn_b' },
      authProfileDigest: 'd',
      createdBy: ws.userId,
    });
  });
  afterAll(() => db.close());

  const manager = () => db.dataSource.manager;
  const inMinutes = (m: number) => new Date(Date.now() + m * 60_000);
  const state = (hash: string, expiresAt = inMinutes(10)) => ({
    stateHash: hash,
    workspaceId: ws.workspaceId,
    connectionId,
    userId: ws.userId,
    codeVerifier: `verifier-${hash}`,
    credentialRevision: 3,
    expiresAt,
  });
  const session = (id: string, extra: { provider?: string; expiresAt?: Date } = {}) => ({
    id,
    workspaceId: ws.workspaceId,
    connectionId,
    userId: ws.userId,
    provider: extra.provider ?? 'broker_a',
    upstreamId: 'gh',
    allowedMcpOrigins: ['https://mcp.example'],
    expiresAt: extra.expiresAt ?? inMinutes(10),
  });
  const count = async (table: string) => (await db.dataSource.query(`SELECT count(*)::int AS n FROM ${table} WHERE connection_id = $1`, [connectionId]))[0].n;

  it('redeems a state exactly once (DELETE ... RETURNING), and nothing for an unknown digest', async () => {
    const expiresAt = inMinutes(10);
    await repo.insertState(manager(), state('h1', expiresAt));
    const [first, second] = await Promise.all([repo.redeemState('h1'), repo.redeemState('h1')]);
    const redeemed = first ?? second;
    expect([first, second].filter((r) => r !== undefined)).toHaveLength(1);
    expect(redeemed).toEqual({
      workspace_id: ws.workspaceId,
      connection_id: connectionId,
      user_id: ws.userId,
      code_verifier: 'verifier-h1',
      credential_revision: 3,
      expires_at: expiresAt,
    });
    expect(await repo.redeemState('unknown')).toBeUndefined();
  });

  it('finds an open session only for the exact key, unconsumed and unexpired (database clock)', async () => {
    await repo.insertSession(manager(), session('cxs_a'));
    await repo.insertSession(manager(), session('cxs_old', { expiresAt: inMinutes(-1) }));
    const key = { id: 'cxs_a', workspaceId: ws.workspaceId, connectionId, userId: ws.userId, provider: 'broker_a' };
    expect(await repo.openSessionOrigins(key)).toEqual(['https://mcp.example']);
    expect(await repo.openSessionOrigins({ ...key, provider: 'broker_b' })).toBeUndefined();
    expect(await repo.openSessionOrigins({ ...key, id: 'cxs_old' })).toBeUndefined();
    await db.dataSource.query(`UPDATE catalog_sessions SET consumed_at = now() WHERE id = 'cxs_a'`);
    expect(await repo.openSessionOrigins(key)).toBeUndefined();
  });

  it("lists the user's pending sessions whose provider is still the connection's lane, oldest first", async () => {
    await repo.insertSession(manager(), session('cxs_1'));
    await repo.insertSession(manager(), session('cxs_2'));
    await repo.insertSession(manager(), session('cxs_lane', { provider: 'broker_b' }));
    await repo.insertSession(manager(), session('cxs_gone', { expiresAt: inMinutes(-1) }));
    expect((await repo.pendingSessions(ws.workspaceId, [connectionId], ws.userId)).map((s) => s.id)).toEqual(['cxs_1', 'cxs_2']);
    expect(await repo.pendingSessions(ws.workspaceId, [connectionId], 'usr_other')).toEqual([]);
    expect(await repo.pendingSessions(ws.workspaceId, [], ws.userId)).toEqual([]);
  });

  it('drops the outstanding states and unconsumed sessions of a connection, keeping consumed sessions', async () => {
    await repo.insertState(manager(), state('h2'));
    await repo.insertSession(manager(), session('cxs_open'));
    await repo.insertSession(manager(), session('cxs_used'));
    await db.dataSource.query(`UPDATE catalog_sessions SET consumed_at = now() WHERE id = 'cxs_used'`);
    await repo.dropOutstanding(manager(), connectionId);
    expect(await count('oauth_states')).toBe(0);
    expect(await db.dataSource.query(`SELECT id FROM catalog_sessions WHERE connection_id = $1`, [connectionId])).toEqual([{ id: 'cxs_used' }]);
  });

  it('purges states and sessions that expired before the cutoff and counts them', async () => {
    await repo.insertState(manager(), state('old', inMinutes(-120)));
    await repo.insertState(manager(), state('new', inMinutes(10)));
    await repo.insertSession(manager(), session('cxs_expired', { expiresAt: inMinutes(-120) }));
    expect(await repo.purgeExpired(inMinutes(-60))).toBe(2);
    expect(await count('oauth_states')).toBe(1);
    expect(await count('catalog_sessions')).toBe(0);
    expect(await repo.purgeExpired(inMinutes(-60))).toBe(0);
  });
});
