import { MigrationInterface, QueryRunner } from 'typeorm';
import { GENESIS_HASH, linkHash, StoredAuditRow, toChainedRow } from 'src/common/crypto/audit-chain';

const BATCH = 1000;

/**
 * The tamper-evident audit trail (docs/audit.md): every audit row gets `seq` and `chain_hash` per
 * workspace, the head of each chain is one row locked by the writer, checkpoints keep signed chain
 * heads, and a development signing key generated at first start is kept here. Rows that exist
 * today are chained oldest first (`occurred_at`, then `id`).
 */
export class AuditChain1763769620000 implements MigrationInterface {
  name = 'AuditChain1763769620000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE audit_events ADD COLUMN seq bigint, ADD COLUMN chain_hash text;
      CREATE TABLE audit_chain_heads (
        workspace_id text PRIMARY KEY REFERENCES workspaces(id),
        seq bigint NOT NULL,
        chain_hash text NOT NULL
      );
      CREATE TABLE audit_checkpoints (
        workspace_id text NOT NULL REFERENCES workspaces(id),
        seq bigint NOT NULL,
        chain_hash text NOT NULL,
        signed_at timestamptz(3) NOT NULL,
        jws text NOT NULL,
        PRIMARY KEY (workspace_id, seq)
      );
      CREATE TABLE control_signing_keys (
        kid text PRIMARY KEY,
        private_key_pem text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      );
    `);
    const workspaces: { workspace_id: string }[] = await q.query(`SELECT DISTINCT workspace_id FROM audit_events ORDER BY workspace_id`);
    for (const { workspace_id: ws } of workspaces) {
      let prev = GENESIS_HASH;
      let seq = 0;
      let after: { at: Date; id: string } | null = null;
      for (;;) {
        const rows: Omit<StoredAuditRow, 'seq' | 'chain_hash'>[] = await q.query(
          `SELECT id, workspace_id, actor_user_id, actor_email, action, target, detail, occurred_at FROM audit_events
           WHERE workspace_id = $1 AND ($2::timestamptz IS NULL OR (occurred_at, id) > ($2, $3)) ORDER BY occurred_at, id LIMIT ${BATCH}`,
          [ws, after?.at ?? null, after?.id ?? null],
        );
        if (rows.length === 0) break;
        const ids: string[] = [];
        const seqs: number[] = [];
        const hashes: string[] = [];
        for (const row of rows) {
          seq += 1;
          prev = linkHash(prev, toChainedRow({ ...row, seq }));
          ids.push(row.id);
          seqs.push(seq);
          hashes.push(prev);
        }
        await q.query(
          `UPDATE audit_events a SET seq = u.seq, chain_hash = u.chain_hash FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(id, seq, chain_hash) WHERE a.id = u.id`,
          [ids, seqs, hashes],
        );
        const last = rows[rows.length - 1];
        after = { at: last.occurred_at, id: last.id };
      }
      await q.query(`INSERT INTO audit_chain_heads (workspace_id, seq, chain_hash) VALUES ($1, $2, $3)`, [ws, seq, prev]);
    }
    await q.query(`
      ALTER TABLE audit_events ALTER COLUMN seq SET NOT NULL, ALTER COLUMN chain_hash SET NOT NULL;
      CREATE UNIQUE INDEX audit_events_seq_idx ON audit_events (workspace_id, seq);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TABLE control_signing_keys, audit_checkpoints, audit_chain_heads;
      DROP INDEX audit_events_seq_idx;
      ALTER TABLE audit_events DROP COLUMN seq, DROP COLUMN chain_hash;
    `);
  }
}
