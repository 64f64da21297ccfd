import { DataSource } from 'typeorm';
import { SubscriptionValues, WebhookSubscriptionsRepository } from 'src/modules/webhooks/webhook-subscriptions.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('WebhookSubscriptionsRepository', () => {
  let db: RepositoryDatabase;
  let ds: DataSource;
  const repo = new WebhookSubscriptionsRepository();
  const WS = 'ws_s';
  const key = (connectionId: string, id: string) => ({ workspaceId: WS, connectionId, id });
  const values = (over: Partial<SubscriptionValues> = {}): SubscriptionValues => ({
    signatureProfile: 'stripe_v1',
    toleranceSeconds: 300,
    notificationUrl: null,
    signingKeys: [{ last4: 'abcd' }] as unknown as SubscriptionValues['signingKeys'],
    ...over,
  });

  async function connection(id: string): Promise<void> {
    await ds.query(
      `INSERT INTO connections (id, workspace_id, kind, connector_slug, source, custody, target, status, auth_profile, auth_profile_digest)
       VALUES ($1, $2, 'tool', $1, 'native', 'native', 'gateway', 'active', '{}', 'd')`,
      [id, WS],
    );
  }

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    ds = db.dataSource;
    await ds.query(`INSERT INTO organizations (id) VALUES ('org_s')`);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, 'org_s', 's', 'dev')`, [WS]);
    await connection('con_a');
    await connection('con_b');
  });
  afterAll(() => db.close());

  it('reads nothing before a subscription exists', async () => {
    expect(await repo.list(ds.manager, WS, 'con_a')).toEqual([]);
    expect(await repo.find(ds.manager, key('con_a', 'wsub_none'))).toBeNull();
    expect(await ds.transaction((m) => repo.lockRevision(m, key('con_a', 'wsub_none')))).toBeNull();
    expect(await repo.ofConnections(ds.manager, WS, [])).toEqual([]);
    expect(await ds.transaction((m) => repo.delete(m, key('con_a', 'wsub_none')))).toBe(false);
  });

  it('inserts at revision 1, replaces at the next revision, lists by id and by connection, and deletes', async () => {
    await ds.transaction((m) => repo.insert(m, key('con_a', 'wsub_b'), values()));
    await ds.transaction((m) => repo.insert(m, key('con_a', 'wsub_a'), values()));
    await ds.transaction((m) => repo.insert(m, key('con_b', 'wsub_c'), values()));
    const first = (await repo.find(ds.manager, key('con_a', 'wsub_b')))!;
    expect(first).toMatchObject({ revision: 1, signatureProfile: 'stripe_v1', toleranceSeconds: 300, notificationUrl: null, signingKeys: [{ last4: 'abcd' }] });

    const revision = await ds.transaction(async (m) => {
      const locked = (await repo.lockRevision(m, key('con_a', 'wsub_b')))!;
      await repo.update(m, key('con_a', 'wsub_b'), values({ toleranceSeconds: 60, notificationUrl: 'https://n.example' }), locked.revision + 1);
      return locked;
    });
    expect(revision).toEqual({ revision: 1 });
    const replaced = (await repo.find(ds.manager, key('con_a', 'wsub_b')))!;
    expect(replaced).toMatchObject({ revision: 2, toleranceSeconds: 60, notificationUrl: 'https://n.example' });
    expect(replaced.updatedAt.getTime()).toBeGreaterThanOrEqual(first.updatedAt.getTime());
    expect(replaced.createdAt).toEqual(first.createdAt);

    expect((await repo.list(ds.manager, WS, 'con_a')).map((s) => s.id)).toEqual(['wsub_a', 'wsub_b']);
    expect((await repo.ofConnections(ds.manager, WS, ['con_b', 'con_a'])).map((s) => `${s.connectionId}/${s.id}`)).toEqual([
      'con_a/wsub_a',
      'con_a/wsub_b',
      'con_b/wsub_c',
    ]);
    expect((await repo.ofConnections(ds.manager, WS, ['con_b'])).map((s) => s.id)).toEqual(['wsub_c']);

    await expect(ds.transaction((m) => repo.insert(m, key('con_a', 'wsub_a'), values()))).rejects.toThrow(/duplicate key/);
    expect(await ds.transaction((m) => repo.delete(m, key('con_a', 'wsub_a')))).toBe(true);
    expect((await repo.list(ds.manager, WS, 'con_a')).map((s) => s.id)).toEqual(['wsub_b']);
  });

  it('locks the subscription row FOR UPDATE until the transaction ends', async () => {
    await ds.transaction((m) => repo.insert(m, key('con_b', 'wsub_l'), values()));
    const runner = ds.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      await repo.lockRevision(runner.manager, key('con_b', 'wsub_l'));
      const other = ds.transaction(async (m) => {
        await m.query(`SET LOCAL lock_timeout = '200ms'`);
        return repo.lockRevision(m, key('con_b', 'wsub_l'));
      });
      await expect(other).rejects.toThrow(/lock timeout/);
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  });
});
