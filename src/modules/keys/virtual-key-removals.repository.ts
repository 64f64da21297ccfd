import { Injectable } from '@nestjs/common';
import type { Client } from 'pg';
import { EntityManager, In, Raw } from 'typeorm';
import { VirtualKeyRemoval } from 'src/modules/keys/entities/virtual-key-removal.entity';

/** The channel on which the transactions that change the pending-removal set announce it (migration 1763769700000). */
export const HOT_PATH_CHANNEL = 'virtual_key_hot_path';

export interface PendingDigestRow {
  /** `k`: a digest of a key still `hot_path_pending` (`key_id` set, `previous` its other digest); `r`: a digest with a removal row. */
  kind: 'k' | 'r';
  key_id: string | null;
  digest: string;
  previous: string | null;
}

/** Every digest whose hot-path removal has not landed, as the listener loads it at start. */
// hand-written: UNION ALL over virtual_keys and virtual_key_removals, run on the listener's own connection.
export const PENDING_DIGESTS = `
  SELECT 'k' AS kind, id AS key_id, key_hash AS digest, previous_key_hash AS previous FROM virtual_keys WHERE hot_path_pending
  UNION ALL
  SELECT 'r', NULL, key_hash, NULL FROM virtual_key_removals`;

/**
 * Every statement on `virtual_key_removals`, and the statements of the pending-removal listener
 * (src/modules/keys/pending-removals.ts), which runs them on a pg client of its own: LISTEN needs a
 * dedicated connection, and the set is loaded on it after LISTEN so nothing committed in between is lost.
 */
@Injectable()
export class VirtualKeyRemovalsRepository {
  /** Records each digest's removal due at its time; a digest already recorded keeps the earlier time. */
  async schedule(manager: EntityManager, keyId: string, workspaceId: string, removals: [string, Date][]): Promise<void> {
    // hand-written: ON CONFLICT upsert keeping the earlier due time (LEAST), all digests in one statement.
    await manager.query(
      `INSERT INTO virtual_key_removals (key_hash, key_id, workspace_id, due_at)
       SELECT h, $2, $3, d FROM unnest($1::text[], $4::timestamptz[]) AS r(h, d)
       ON CONFLICT (key_hash) DO UPDATE SET due_at = LEAST(virtual_key_removals.due_at, EXCLUDED.due_at)`,
      [removals.map(([hash]) => hash), keyId, workspaceId, removals.map(([, due]) => due.toISOString())],
    );
  }

  /** Every removal of the key becomes due no later than `at`. */
  async bringForward(manager: EntityManager, keyId: string, at: Date): Promise<void> {
    // hand-written: LEAST over the row's own column.
    await manager.query(`UPDATE virtual_key_removals SET due_at = LEAST(due_at, $2) WHERE key_id = $1`, [keyId, at]);
  }

  /** The key's removals due now (database clock), locked, by digest. */
  async lockDue(manager: EntityManager, keyId: string): Promise<string[]> {
    const rows = await manager.find(VirtualKeyRemoval, {
      select: { keyHash: true },
      where: { keyId, dueAt: Raw((column) => `${column} <= clock_timestamp()`) },
      order: { keyHash: 'ASC' },
      lock: { mode: 'pessimistic_write' },
    });
    return rows.map((r) => r.keyHash);
  }

  async delete(manager: EntityManager, keyId: string, keyHashes: string[]): Promise<void> {
    if (keyHashes.length > 0) await manager.delete(VirtualKeyRemoval, { keyId, keyHash: In(keyHashes) });
  }

  /** The listener's connection subscribes to the removal channel and to its own marker channel. */
  async listen(client: Client, markerChannel: string): Promise<void> {
    await client.query(`LISTEN ${HOT_PATH_CHANNEL}; LISTEN ${markerChannel}`);
  }

  async pendingDigests(client: Client): Promise<PendingDigestRow[]> {
    return (await client.query<PendingDigestRow>(PENDING_DIGESTS)).rows;
  }

  /** A marker through PostgreSQL's notification queue (delivered after every notification committed before it). */
  async mark(client: Client, markerChannel: string, sequence: number): Promise<void> {
    await client.query(`SELECT pg_notify($1, $2)`, [markerChannel, String(sequence)]);
  }
}
