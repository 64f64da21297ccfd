import { NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('NotificationMessagesRepository.existingDedupeKeys', () => {
  let db: RepositoryDatabase;
  let repo: NotificationMessagesRepository;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new NotificationMessagesRepository(db.dataSource);
    await db.dataSource.query(
      `INSERT INTO notification_messages (id, workspace_id, type, body, dedupe_key, created_at)
       VALUES ('msg_1', 'ws_a', 't', '{}', 'budget:key_1:50:2031-05', now()), ('msg_2', 'ws_b', 't', '{}', 'budget:key_2:50:2031-05', now()), ('msg_3', 'ws_a', 't', '{}', NULL, now())`,
    );
  });
  afterAll(() => db.close());

  it('answers the (workspace, dedupe key) pairs that already have a message, each pair in its own workspace only', async () => {
    const found = await db.dataSource.transaction((m) =>
      repo.existingDedupeKeys(m, ['ws_a', 'ws_a', 'ws_a', 'ws_b'], ['budget:key_1:50:2031-05', 'budget:key_1:80:2031-05', 'budget:key_2:50:2031-05', 'budget:key_2:50:2031-05']),
    );
    expect([...found].sort()).toEqual(['ws_a budget:key_1:50:2031-05', 'ws_b budget:key_2:50:2031-05']);
  });

  it('reads nothing for no pairs', async () => {
    expect(await repo.existingDedupeKeys(db.dataSource.manager, [], [])).toEqual(new Set());
  });
});
