import { canonicalJson, sha256Tagged } from 'src/common/crypto/crypto';
import { isUniqueViolation } from 'src/database/errors';
import { ConnectionsRepository, NewConnection } from 'src/modules/connections/connections.repository';
import { AuthProfile } from 'src/modules/connections/dto/connection.document';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { SeededWorkspace, seedWorkspace } from 'test/connections/db-seed';

describe('ConnectionsRepository', () => {
  let db: RepositoryDatabase;
  let repo: ConnectionsRepository;
  let ws: SeededWorkspace;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new ConnectionsRepository(db.dataSource);
  });
  beforeEach(async () => {
    ws = await seedWorkspace(db.dataSource);
  });
  afterAll(() => db.close());

  const manager = () => db.dataSource.manager;
  const raw = async (id: string) => (await db.dataSource.query(`SELECT * FROM connections WHERE id = $1`, [id]))[0];
  const apiKey = (slug: string): AuthProfile => ({ type: 'api_key', connector_slug: slug });
  const tool = (slug: string, extra: Partial<NewConnection> = {}): NewConnection => ({
    workspaceId: ws.workspaceId,
    kind: 'tool',
    connectorSlug: slug,
    source: 'native',
    custody: 'obol',
    target: 'gateway',
    authProfile: apiKey(slug),
    authProfileDigest: sha256Tagged(canonicalJson(apiKey(slug))),
    createdBy: ws.userId,
    ...extra,
  });
  const key = { kind: 'key' as const, envelope: 'env-1', keyId: 'kid-1', last4: 'abcd', scheme: 'api_key', grantCleared: true };

  it('inserts a pending connection and reads it back, by kind or any kind', async () => {
    const id = await repo.insert(manager(), tool('stripe'));
    expect(id).toMatch(/^conn_/);
    const row = await repo.find(ws.workspaceId, id);
    expect(row).toMatchObject({
      id,
      workspace_id: ws.workspaceId,
      kind: 'tool',
      status: 'pending',
      credential_revision: 0,
      credential_envelope: null,
      auth_profile: apiKey('stripe'),
    });
    expect(await repo.find(ws.workspaceId, id, ['catalog_provider'])).toBeUndefined();
    expect(await repo.find('ws_other', id)).toBeUndefined();
  });

  it('refuses a second live connection on one connector (the partial unique index)', async () => {
    await repo.insert(manager(), tool('stripe'));
    const second = await repo.insert(manager(), tool('stripe')).catch((error: unknown) => error);
    expect(isUniqueViolation(second)).toBe(true);
  });

  it('lists non-model connections oldest first; tool rows by slug; nothing for no slugs', async () => {
    const a = await repo.insert(manager(), tool('stripe'));
    const b = await repo.insert(manager(), tool('github'));
    await repo.insert(manager(), {
      ...tool('openai'),
      kind: 'model',
      target: 'model_provider',
      modelConfig: { model_pattern: 'gpt-*', upstream_model: 'gpt-4o', base_url: 'https://api.openai.com/v1' },
    });
    expect((await repo.listOperated(ws.workspaceId)).map((r) => r.id)).toEqual([a, b]);
    expect((await repo.toolsOn(ws.workspaceId, ['github', 'linear'])).map((r) => r.id)).toEqual([b]);
    expect(await repo.toolsOn(ws.workspaceId, [])).toEqual([]);
  });

  it('answers holds, active ids, live tools, another live tool and the active broker account', async () => {
    const a = await repo.insert(manager(), tool('stripe'));
    const b = await repo.insert(manager(), tool('github'));
    const broker = await repo.insert(manager(), {
      ...tool('broker_a'),
      kind: 'catalog_provider',
      source: 'broker_a',
      custody: 'federated',
      target: 'broker',
      authProfile: { type: 'broker_api_key', provider: 'broker_a' },
    });
    expect(await repo.holds(manager(), ws.workspaceId, a)).toBe(true);
    expect(await repo.holds(manager(), ws.workspaceId, a, ['catalog_provider'])).toBe(false);
    expect(await repo.holds(manager(), 'ws_other', a)).toBe(false);
    expect(await repo.activeBrokerId(manager(), ws.workspaceId, 'broker_a')).toBeUndefined();

    await repo.activateCredential(manager(), ws.workspaceId, b, key);
    await repo.activateCredential(manager(), ws.workspaceId, broker, key);
    expect(await repo.activeIds(manager(), ws.workspaceId)).toEqual([b, broker].sort());
    expect(await repo.liveTools(ws.workspaceId, 'active')).toEqual([{ connectorSlug: 'github', source: 'native' }]);
    expect(new Set((await repo.liveTools(ws.workspaceId, 'not_disabled')).map((r) => r.connectorSlug))).toEqual(new Set(['stripe', 'github']));
    expect(await repo.activeBrokerId(manager(), ws.workspaceId, 'broker_a')).toBe(broker);

    expect(await repo.liveToolExists(manager(), ws.workspaceId, 'stripe', a)).toBe(false);
    await repo.disable(manager(), ws.workspaceId, a);
    const again = await repo.insert(manager(), tool('stripe'));
    expect(await repo.liveToolExists(manager(), ws.workspaceId, 'stripe', a)).toBe(true);
    expect(await repo.liveToolExists(manager(), ws.workspaceId, 'stripe', again)).toBe(false);
  });

  it('reads a tool shape share-locked, and nothing for another kind', async () => {
    const id = await repo.insert(manager(), {
      ...tool('github'),
      source: 'broker_a',
      custody: 'federated',
      target: 'broker',
      authProfile: { type: 'federated', provider: 'broker_a', upstream_id: 'gh', broker_connection_id: 'conn_broker' },
    });
    await db.dataSource.transaction(async (tx) => {
      expect(await repo.toolShape(tx, ws.workspaceId, id)).toEqual({
        custody: 'federated',
        source: 'broker_a',
        target: 'broker',
        profile_type: 'federated',
        broker_reference: 'conn_broker',
      });
      expect(await repo.toolShape(tx, ws.workspaceId, 'conn_missing')).toBeUndefined();
    });
    const native = await repo.insert(manager(), tool('stripe'));
    await db.dataSource.transaction(async (tx) => {
      expect((await repo.toolShape(tx, ws.workspaceId, native))?.broker_reference).toBeNull();
    });
  });

  it('locks a row FOR UPDATE: a second locker waits for the first transaction', async () => {
    const id = await repo.insert(manager(), tool('stripe'));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = db.dataSource.transaction(async (tx) => {
      expect(await repo.lock(tx, ws.workspaceId, id, ['tool'])).toMatchObject({ id });
      await held;
    });
    await new Promise((r) => setTimeout(r, 100));
    let second = false;
    const waiting = db.dataSource.transaction(async (tx) => {
      await repo.lock(tx, ws.workspaceId, id, ['tool']);
      second = true;
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(second).toBe(false);
    release();
    await Promise.all([first, waiting]);
    expect(second).toBe(true);
    await db.dataSource.transaction(async (tx) => {
      expect(await repo.lock(tx, ws.workspaceId, id, ['catalog_provider'])).toBeUndefined();
      expect((await repo.lockLive(tx, ws.workspaceId, 'tool', 'stripe')).map((r) => r.id)).toEqual([id]);
      expect(await repo.lockLive(tx, ws.workspaceId, 'tool', 'github')).toEqual([]);
    });
  });

  it('activateCredential (key): active, the next revision, sealed key stored; the grant cleared only when asked', async () => {
    const id = await repo.insert(manager(), tool('stripe'));
    await db.dataSource.query(`UPDATE connections SET refresh_envelope = 'r', expires_at = now(), refresh_failure = 'invalid_grant' WHERE id = $1`, [id]);
    const before = await raw(id);
    expect(await repo.activateCredential(manager(), ws.workspaceId, id, { ...key, grantCleared: false })).toBe(1);
    let after = await raw(id);
    expect(after).toMatchObject({
      status: 'active',
      credential_envelope: 'env-1',
      key_id: 'kid-1',
      last4: 'abcd',
      credential_scheme: 'api_key',
      credential_revision: 1,
    });
    expect(after).toMatchObject({ refresh_envelope: 'r', refresh_failure: 'invalid_grant' });
    expect(after.updated_at.getTime()).toBeGreaterThanOrEqual(before.updated_at.getTime());
    await repo.activateCredential(manager(), ws.workspaceId, id, key);
    after = await raw(id);
    expect(after).toMatchObject({ credential_revision: 2, refresh_envelope: null, expires_at: null, refresh_failure: null });
    expect(await repo.activateCredential(manager(), 'ws_other', id, key)).toBe(0);
  });

  it('activateCredential (oauth): bearer credential, refresh envelope and expiry, a fresh refresh schedule', async () => {
    const id = await repo.insert(manager(), tool('github'));
    await db.dataSource.query(`UPDATE connections SET key_id = 'old', refresh_attempts = 3, refresh_not_before = now() WHERE id = $1`, [id]);
    const expiresAt = '2031-01-02T03:04:05.678Z';
    await repo.activateCredential(manager(), ws.workspaceId, id, { kind: 'oauth', envelope: 'acc', refreshEnvelope: 'ref', expiresAt, last4: null });
    const row = await raw(id);
    expect(row).toMatchObject({
      status: 'active',
      credential_envelope: 'acc',
      refresh_envelope: 'ref',
      key_id: null,
      credential_scheme: 'bearer',
      last4: null,
      credential_revision: 1,
    });
    expect(row).toMatchObject({ refresh_attempts: 0, refresh_not_before: null, refresh_failure: null });
    expect(row.expires_at.toISOString()).toBe(expiresAt);
  });

  it('activateCredential (refresh): only while active at the claimed revision; a null refresh envelope keeps the stored one', async () => {
    const id = await repo.insert(manager(), tool('github'));
    await repo.activateCredential(manager(), ws.workspaceId, id, { kind: 'oauth', envelope: 'acc', refreshEnvelope: 'ref', expiresAt: null, last4: 'wxyz' });
    await db.dataSource.query(`UPDATE connections SET refresh_lease_until = now() + interval '1 minute', refresh_attempts = 2 WHERE id = $1`, [id]);
    const grant = { kind: 'refresh' as const, envelope: 'acc-2', refreshEnvelope: null, expiresAt: '2031-01-01T00:00:00.000Z', revision: 1 };
    expect(await repo.activateCredential(manager(), ws.workspaceId, id, { ...grant, revision: 0 })).toBe(0);
    expect(await repo.activateCredential(manager(), ws.workspaceId, id, grant)).toBe(1);
    const row = await raw(id);
    expect(row).toMatchObject({
      credential_envelope: 'acc-2',
      refresh_envelope: 'ref',
      credential_revision: 1,
      last4: 'wxyz',
      refresh_attempts: 0,
      refresh_lease_until: null,
    });
    expect(row.last_refreshed_at).toBeInstanceOf(Date);
    await repo.activateCredential(manager(), ws.workspaceId, id, { ...grant, refreshEnvelope: 'ref-2' });
    expect((await raw(id)).refresh_envelope).toBe('ref-2');
    await repo.disable(manager(), ws.workspaceId, id);
    expect(await repo.activateCredential(manager(), ws.workspaceId, id, grant)).toBe(0);
  });

  it('retargets, re-profiles (updated_at untouched), reopens, purges and deletes', async () => {
    const id = await repo.insert(manager(), tool('github'));
    const federated: AuthProfile = { type: 'federated', provider: 'broker_a', upstream_id: 'gh', broker_connection_id: 'conn_b' };
    await repo.retarget(manager(), ws.workspaceId, id, {
      source: 'broker_a',
      custody: 'federated',
      target: 'broker',
      authProfile: federated,
      authProfileDigest: 'd1',
      clientSecretEnvelope: null,
    });
    expect(await raw(id)).toMatchObject({ source: 'broker_a', custody: 'federated', target: 'broker', auth_profile: federated, auth_profile_digest: 'd1' });
    const stamped = (await raw(id)).updated_at;
    await repo.setProfile(manager(), ws.workspaceId, id, { ...federated, broker_connection_id: 'conn_c' }, 'd2');
    expect(await raw(id)).toMatchObject({ auth_profile_digest: 'd2', updated_at: stamped });

    await repo.activateCredential(manager(), ws.workspaceId, id, key);
    await repo.reopen(manager(), ws.workspaceId, id, 5, 'secret-env');
    expect(await raw(id)).toMatchObject({
      status: 'pending',
      credential_revision: 5,
      client_secret_envelope: 'secret-env',
      refresh_attempts: 0,
      refresh_not_before: null,
    });

    await repo.purge(manager(), ws.workspaceId, id);
    expect(await raw(id)).toMatchObject({
      status: 'disabled',
      client_secret_envelope: null,
      credential_envelope: null,
      key_id: null,
      credential_scheme: null,
      last4: null,
      expires_at: null,
      credential_revision: 6,
    });
    await repo.delete(manager(), ws.workspaceId, id);
    expect(await raw(id)).toBeUndefined();
  });

  it('publishes active, credentialed non-model rows in id order, and counts them for the overview', async () => {
    const a = await repo.insert(manager(), tool('stripe'));
    const b = await repo.insert(manager(), tool('github'));
    await repo.insert(manager(), tool('linear'));
    expect(await repo.published(manager(), ws.workspaceId)).toEqual([]);
    expect(await repo.counts(ws.workspaceId)).toEqual({ total: 3, active: 0 });
    await repo.activateCredential(manager(), ws.workspaceId, a, key);
    await repo.activateCredential(manager(), ws.workspaceId, b, key);
    expect((await repo.published(manager(), ws.workspaceId)).map((r) => r.id)).toEqual([a, b].sort());
    expect(await repo.counts(ws.workspaceId)).toEqual({ total: 3, active: 2 });
    expect(await repo.counts('ws_none')).toEqual({ total: 0, active: 0 });
  });
});
