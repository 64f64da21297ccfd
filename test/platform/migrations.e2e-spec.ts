import { Client } from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';
import { dataSourceOptions } from 'src/database/data-source';
import { AuditChain1763769620000 } from 'src/database/migrations/1763769620000-audit-chain';
import { GENESIS_HASH, linkHash, toChainedRow } from 'src/common/crypto/audit-chain';
import { runMigrations } from 'src/database/migrate';
import { MIGRATIONS } from 'src/database/migrations';
import { createSuiteDatabase } from 'test/support/database';

describe('migrations', () => {
  it('apply every migration exactly once when several replicas start together', async () => {
    const db = await createSuiteDatabase();
    try {
      const results = await Promise.all([runMigrations(db.url), runMigrations(db.url), runMigrations(db.url)]);
      expect(results.map((r) => r.length).sort()).toEqual([0, 0, MIGRATIONS.length]);
      const client = new Client({ connectionString: db.url });
      await client.connect();
      try {
        const { rows } = await client.query(`SELECT count(*)::int AS n FROM typeorm_migrations`);
        expect(rows[0].n).toBe(MIGRATIONS.length);
      } finally {
        await client.end();
      }
      expect(await runMigrations(db.url)).toEqual([]);
    } finally {
      await db.drop();
    }
  });

  it('leaves the tables every batch updates in place on half-full pages (HOT updates), also on a database migrated before the last of them', async () => {
    const db = await createSuiteDatabase();
    const fillfactors = async () => {
      const client = new Client({ connectionString: db.url });
      await client.connect();
      try {
        const { rows } = await client.query(
          `SELECT relname, reloptions FROM pg_class WHERE relname IN ('usage_rollups', 'usage_minute_rollups', 'receipt_counters', 'virtual_key_usage') ORDER BY relname`,
        );
        return rows;
      } finally {
        await client.end();
      }
    };
    // Migrated up to, not including, the one that set the last fillfactor (later migrations may follow it).
    const hotUpdates = MIGRATIONS.findIndex((m) => m.name === 'KeyUsageHotUpdates1763769690000');
    const before = new DataSource({ ...dataSourceOptions(db.url, 1), migrations: MIGRATIONS.slice(0, hotUpdates) } as DataSourceOptions);
    await before.initialize();
    try {
      await before.runMigrations({ transaction: 'each' });
    } finally {
      await before.destroy();
    }
    try {
      expect((await fillfactors()).find((r) => r.relname === 'virtual_key_usage').reloptions).toBeNull();
      expect(await runMigrations(db.url)).toEqual(MIGRATIONS.slice(hotUpdates).map((m) => m.name));
      expect(await fillfactors()).toEqual(
        ['receipt_counters', 'usage_minute_rollups', 'usage_rollups', 'virtual_key_usage'].map((relname) => ({ relname, reloptions: ['fillfactor=50'] })),
      );
    } finally {
      await db.drop();
    }
  });

  it('chains the audit rows that exist before the audit chain, oldest first, per workspace', async () => {
    const db = await createSuiteDatabase();
    const before = new DataSource({ ...dataSourceOptions(db.url, 1), migrations: MIGRATIONS.filter((m) => m !== AuditChain1763769620000) } as DataSourceOptions);
    await before.initialize();
    try {
      await before.runMigrations({ transaction: 'each' });
      await before.query(`INSERT INTO organizations (id) VALUES ('org_m')`);
      await before.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ('ws_a', 'org_m', 'a', 'dev'), ('ws_b', 'org_m', 'b', 'dev')`);
      await before.query(`
        INSERT INTO audit_events (id, workspace_id, actor_user_id, actor_email, action, target, detail, occurred_at) VALUES
          ('aud_2', 'ws_a', NULL, NULL, 'key.mint', 'key_2', '{"agent_id": "x", "tools_mode": "all"}', '2026-01-01T00:00:02.5Z'),
          ('aud_1', 'ws_a', 'usr_1', 'a@example.com', 'workspace.create', 'ws_a', '{"env": "dev"}', '2026-01-01T00:00:01Z'),
          ('aud_3', 'ws_a', NULL, NULL, 'key.revoke', 'key_2', '{}', '2026-01-01T00:00:02.5Z'),
          ('aud_9', 'ws_b', NULL, NULL, 'workspace.create', 'ws_b', '{}', '2026-01-01T00:00:00Z')`);
    } finally {
      await before.destroy();
    }
    try {
      expect(await runMigrations(db.url)).toEqual(['AuditChain1763769620000']);
      const client = new Client({ connectionString: db.url });
      await client.connect();
      try {
        const { rows } = await client.query(`SELECT id, workspace_id, seq, actor_user_id, actor_email, action, target, detail, occurred_at, chain_hash FROM audit_events ORDER BY workspace_id, seq`);
        expect(rows.map((r) => [r.id, r.seq])).toEqual([['aud_1', '1'], ['aud_2', '2'], ['aud_3', '3'], ['aud_9', '1']]);
        let prev = GENESIS_HASH;
        for (const row of rows.slice(0, 3)) {
          prev = linkHash(prev, toChainedRow(row));
          expect(row.chain_hash).toBe(prev);
        }
        expect(rows[3].chain_hash).toBe(linkHash(GENESIS_HASH, toChainedRow(rows[3])));
        const heads = await client.query(`SELECT workspace_id, seq, chain_hash FROM audit_chain_heads ORDER BY workspace_id`);
        expect(heads.rows).toEqual([{ workspace_id: 'ws_a', seq: '3', chain_hash: prev }, { workspace_id: 'ws_b', seq: '1', chain_hash: rows[3].chain_hash }]);
      } finally {
        await client.end();
      }
    } finally {
      await db.drop();
    }
  });

  it('gives existing deduplicated messages the instant their event can no longer recur', async () => {
    const db = await createSuiteDatabase();
    const at = MIGRATIONS.findIndex((m) => m.name === 'NotificationDedupeUntil1763769750000');
    const before = new DataSource({ ...dataSourceOptions(db.url, 1), migrations: MIGRATIONS.slice(0, at) } as DataSourceOptions);
    await before.initialize();
    try {
      await before.runMigrations({ transaction: 'each' });
      await before.query(`
        INSERT INTO notification_messages (id, workspace_id, type, body, dedupe_key, created_at) VALUES
          ('msg_b', 'ws_a', 'budget.threshold_crossed', '{}', 'budget:key_1:80:2026-01-01T00:00:00.000Z', '2026-01-01T05:00:00Z'),
          ('msg_k', 'ws_a', 'key.expiring', '{}', 'key.expiring:key_1:2026-02-03T04:05:06.789Z', '2026-01-28T00:00:00Z'),
          ('msg_r', 'ws_a', 'approval.resolved', '{}', 'approval.resolved:apr_gone', '2026-01-02T00:00:00Z'),
          ('msg_n', 'ws_a', 'key.revoked', '{}', NULL, '2026-01-02T00:00:00Z'),
          ('msg_x', 'ws_a', 'approval.expiring', '{}', 'approval.expiring:apr_1', '2026-01-03T00:00:00Z'),
          ('msg_y', 'ws_a', 'approval.resolved', '{}', 'approval.resolved:apr_1', '2026-01-03T00:10:00Z'),
          ('msg_z', 'ws_b', 'approval.resolved', '{}', 'approval.resolved:apr_1', '2026-01-03T00:10:00Z')`);
      // An approval still stored (its workspace's rows are not needed here: the checks are off for this one insert).
      await before.query(`SET session_replication_role = replica`);
      await before.query(`
        INSERT INTO approvals (id, workspace_id, request_id, key_id, invocation_id, tool, invocation_tool, connection_id, env, safe_summary, reason,
          status, decision_reason, execution_status, policy_set_hash, matched_rules, quorum_required, created_at, expires_at, decided_at)
        VALUES ('apr_1', 'ws_a', 'req_1', 'key_1', NULL, 'refund', 'refund', 'conn_1', 'dev', '{}', 'r', 'pending', 'awaiting_quorum', 'not_requested', 'h', '[]', 1,
          '2026-01-02T23:50:00Z', '2026-01-03T00:05:00.123Z', NULL)`);
      await before.query(`SET session_replication_role = origin`);
    } finally {
      await before.destroy();
    }
    try {
      await runMigrations(db.url);
      const client = new Client({ connectionString: db.url });
      await client.connect();
      try {
        const { rows } = await client.query(`SELECT id, dedupe_until FROM notification_messages ORDER BY id`);
        expect(rows).toEqual([
          { id: 'msg_b', dedupe_until: new Date('2026-02-01T00:00:00Z') },
          { id: 'msg_k', dedupe_until: new Date('2026-02-03T04:05:06.789Z') },
          { id: 'msg_n', dedupe_until: null },
          { id: 'msg_r', dedupe_until: new Date('2026-01-02T00:00:00Z') },
          // The approval's: its expiry for approval.expiring, a day after for approval.resolved; another workspace's key is not its.
          { id: 'msg_x', dedupe_until: new Date('2026-01-03T00:05:00.123Z') },
          { id: 'msg_y', dedupe_until: new Date('2026-01-04T00:05:00.123Z') },
          { id: 'msg_z', dedupe_until: new Date('2026-01-03T00:10:00Z') },
        ]);
      } finally {
        await client.end();
      }
    } finally {
      await db.drop();
    }
  });
});
