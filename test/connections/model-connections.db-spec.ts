import { isUniqueViolation } from 'src/database/errors';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { ModelConnectionsRepository } from 'src/modules/connections/model-connections.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { SeededWorkspace, seedWorkspace } from 'test/connections/db-seed';

describe('ModelConnectionsRepository', () => {
  let db: RepositoryDatabase;
  let repo: ModelConnectionsRepository;
  let connections: ConnectionsRepository;
  let ws: SeededWorkspace;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new ModelConnectionsRepository(db.dataSource);
    connections = new ConnectionsRepository(db.dataSource);
  });
  beforeEach(async () => {
    ws = await seedWorkspace(db.dataSource);
  });
  afterAll(() => db.close());

  const manager = () => db.dataSource.manager;
  const model = (pattern: string) =>
    connections.insert(manager(), {
      workspaceId: ws.workspaceId,
      kind: 'model',
      connectorSlug: 'openai',
      source: 'native',
      custody: 'obol',
      target: 'model_provider',
      authProfile: { type: 'model_api_key', provider: 'openai' },
      authProfileDigest: 'd',
      modelConfig: { model_pattern: pattern, upstream_model: 'gpt-4o', base_url: 'https://api.openai.com/v1' },
      createdBy: ws.userId,
    });
  const sealed = { kind: 'key' as const, envelope: 'env', keyId: 'kid', last4: 'wxyz', scheme: 'bearer', grantCleared: false };

  it('lists model rows oldest first and reads one, locked or not, only as a model row', async () => {
    const a = await model('gpt-*');
    const b = await model('o1-*');
    expect((await repo.listModels(ws.workspaceId)).map((r) => r.id)).toEqual([a, b]);
    expect(await repo.findModel(manager(), ws.workspaceId, a)).toEqual({
      id: a,
      workspace_id: ws.workspaceId,
      connector_slug: 'openai',
      status: 'pending',
      auth_profile_digest: 'd',
      model_config: { model_pattern: 'gpt-*', upstream_model: 'gpt-4o', base_url: 'https://api.openai.com/v1' },
      credential_envelope: null,
      last4: null,
      credential_revision: 0,
    });
    await db.dataSource.transaction(async (tx) => expect((await repo.findModel(tx, ws.workspaceId, b, true))?.id).toBe(b));
    expect(await repo.findModel(manager(), 'ws_other', a)).toBeUndefined();
  });

  it('says whether a connection that is not disabled claims a pattern (jsonb field predicate)', async () => {
    const a = await model('gpt-*');
    expect(await repo.modelPatternClaimed(manager(), ws.workspaceId, 'gpt-*')).toBe(true);
    expect(await repo.modelPatternClaimed(manager(), ws.workspaceId, 'claude-*')).toBe(false);
    await connections.disable(manager(), ws.workspaceId, a);
    expect(await repo.modelPatternClaimed(manager(), ws.workspaceId, 'gpt-*')).toBe(false);
  });

  it('refuses a second live connection claiming one pattern (the unique index)', async () => {
    await model('gpt-*');
    expect(isUniqueViolation(await model('gpt-*').catch((error: unknown) => error))).toBe(true);
  });

  it('publishes only active, credentialed model rows; activation keeps the row otherwise as it was', async () => {
    const a = await model('gpt-*');
    await model('o1-*');
    expect(await repo.publishedModels(manager(), ws.workspaceId)).toEqual([]);
    expect(await connections.activateCredential(manager(), ws.workspaceId, a, sealed)).toBe(1);
    const published = await repo.publishedModels(manager(), ws.workspaceId);
    expect(published.map((r) => [r.id, r.status, r.credential_envelope, r.last4, r.credential_revision])).toEqual([[a, 'active', 'env', 'wxyz', 1]]);
    const [row] = await db.dataSource.query(`SELECT key_id, credential_scheme, refresh_envelope, expires_at FROM connections WHERE id = $1`, [a]);
    expect(row).toEqual({ key_id: 'kid', credential_scheme: 'bearer', refresh_envelope: null, expires_at: null });
  });
});
