import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { CredentialRefreshRepository } from 'src/modules/connections/credential-refresh.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { SeededWorkspace, seedWorkspace } from 'test/connections/db-seed';

describe('CredentialRefreshRepository', () => {
  let db: RepositoryDatabase;
  let repo: CredentialRefreshRepository;
  let connections: ConnectionsRepository;
  let ws: SeededWorkspace;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new CredentialRefreshRepository(db.dataSource);
    connections = new ConnectionsRepository(db.dataSource);
  });
  beforeEach(async () => {
    ws = await seedWorkspace(db.dataSource);
    // Earlier tests' rows must not be claimable by this one.
    await db.dataSource.query(`UPDATE connections SET status = 'disabled'`);
  });
  afterAll(() => db.close());

  const raw = async (id: string) => (await db.dataSource.query(`SELECT * FROM connections WHERE id = $1`, [id]))[0];
  /** An active OAuth connection whose access token expires in `inS` seconds. */
  const oauth = async (slug: string, inS: number) => {
    const id = await connections.insert(db.dataSource.manager, {
      workspaceId: ws.workspaceId,
      kind: 'tool',
      connectorSlug: slug,
      source: 'native',
      custody: 'obol',
      target: 'gateway',
      authProfile: { type: 'api_key', connector_slug: slug },
      authProfileDigest: 'd',
      createdBy: ws.userId,
    });
    const expiresAt = new Date(Date.now() + inS * 1000).toISOString();
    await connections.activateCredential(db.dataSource.manager, ws.workspaceId, id, {
      kind: 'oauth',
      envelope: 'e',
      refreshEnvelope: 'r',
      expiresAt,
      last4: null,
    });
    return id;
  };

  it('claims due rows soonest-expiring first, up to the batch, under a lease; a leased row is not claimed again', async () => {
    const late = await oauth('github', 500);
    const soon = await oauth('linear', 100);
    await oauth('notion', 3600);
    const claimed = await repo.claimRefreshes(600, 1, 120);
    expect(claimed).toEqual([{
      id: soon,
      workspace_id: ws.workspaceId,
      connector_slug: 'linear',
      refresh_envelope: 'r',
      credential_revision: 1,
      refresh_attempts: 0,
    }]);
    expect((await raw(soon)).refresh_lease_until.getTime()).toBeGreaterThan(Date.now() + 100_000);
    expect((await repo.claimRefreshes(600, 10, 120)).map((r) => r.id)).toEqual([late]);
    expect(await repo.claimRefreshes(600, 10, 120)).toEqual([]);
  });

  it('skips rows another transaction holds (FOR UPDATE SKIP LOCKED) instead of waiting', async () => {
    const held = await oauth('github', 100);
    const free = await oauth('linear', 200);
    await db.dataSource.transaction(async (tx) => {
      await connections.lock(tx, ws.workspaceId, held, ['tool']);
      expect((await repo.claimRefreshes(600, 10, 120)).map((r) => r.id)).toEqual([free]);
    });
  });

  it('defers with backoff on the database clock, releasing the lease; a deferred row is not due', async () => {
    const id = await oauth('github', 100);
    await repo.claimRefreshes(600, 10, 120);
    await repo.deferRefresh(ws.workspaceId, id, 1, 60);
    const row = await raw(id);
    expect(row).toMatchObject({ refresh_attempts: 1, refresh_lease_until: null });
    expect(row.refresh_not_before.getTime()).toBeGreaterThan(Date.now() + 50_000);
    expect(await repo.claimRefreshes(600, 10, 120)).toEqual([]);
    await repo.deferRefresh(ws.workspaceId, id, 0, 60);
    expect((await raw(id)).refresh_attempts).toBe(1);
  });

  it('refuses only while active at the claimed revision: pending with the failure recorded, envelopes kept', async () => {
    const id = await oauth('github', 100);
    expect(await repo.refuseRefresh(db.dataSource.manager, ws.workspaceId, id, 0, 'invalid_grant')).toBe(0);
    expect(await repo.refuseRefresh(db.dataSource.manager, ws.workspaceId, id, 1, 'invalid_grant')).toBe(1);
    expect(await raw(id)).toMatchObject({
      status: 'pending',
      refresh_failure: 'invalid_grant',
      credential_envelope: 'e',
      refresh_envelope: 'r',
      refresh_lease_until: null,
    });
    expect(await repo.refuseRefresh(db.dataSource.manager, ws.workspaceId, id, 1, 'invalid_grant')).toBe(0);
  });
});
