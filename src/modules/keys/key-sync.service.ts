import { Injectable, Logger } from '@nestjs/common';
import { inLanes } from 'src/common/async/lanes';
import { errorFields } from 'src/common/logging/error-fields';
import { Transactions } from 'src/database/transactions';
import { keyStatus, toKeyContext } from 'src/modules/keys/dto/key.document';
import { PendingRemovals } from 'src/modules/keys/pending-removals';
import { VirtualKeyRemovalsRepository } from 'src/modules/keys/virtual-key-removals.repository';
import { VirtualKeysRepository } from 'src/modules/keys/virtual-keys.repository';
import { HotPath } from 'src/modules/publication/hot-path';

/** Key syncs a reconcile pass runs at once: after an outage every pending revocation lands within seconds (bench/README.md). */
const SYNC_CONCURRENCY = 4;

/**
 * Keeps the hot path (Redis) in agreement with the committed keys: after each mint, rotation and
 * revoke, and in the sync job's passes for what failed after commit.
 */
@Injectable()
export class KeySync {
  private readonly logger = new Logger('keys');

  constructor(
    private readonly keys: VirtualKeysRepository,
    private readonly removals: VirtualKeyRemovalsRepository,
    private readonly transactions: Transactions,
    private readonly hotPath: HotPath,
    private readonly pending: PendingRemovals,
  ) {}

  /**
   * After commit of a revoke or rotation: the sync, and when its Redis delete did not land, the
   * wait after which no replica can still answer the removed digest from Redis.
   */
  async settle(keyId: string): Promise<void> {
    if (!(await this.sync(keyId))) await this.pending.outwait();
  }

  /**
   * Makes the hot path agree with the committed key: an active key's context is written under its
   * digest (expiring at `expires_at`) and under the replaced secret's digest while that is in its
   * grace (expiring at `valid_until`); any other key's digests are deleted, and so is every digest
   * whose removal is due. Then the pending flag and the settled removals are cleared. Runs under
   * the key's row lock, so a sync can never overwrite the outcome of a later revoke or rotation.
   * False when deferred.
   */
  async sync(keyId: string): Promise<boolean> {
    try {
      return await this.transactions.run(async ({ manager }) => {
        const row = await this.keys.lockContext(manager, keyId);
        if (!row) return false;
        const now = new Date();
        const active = keyStatus(row, now) === 'active';
        const due = await this.removals.lockDue(manager, keyId);
        // Issued together (node-redis pipelines commands of one tick); one key per command, so Redis Cluster is fine.
        const writes: Promise<void>[] = [];
        const name = this.hotPath.keyName(row.key_hash);
        writes.push(active ? this.hotPath.set(name, JSON.stringify(toKeyContext(row, now)), row.expires_at) : this.hotPath.delete(name));
        if (row.previous_key_hash) {
          const previous = this.hotPath.keyName(row.previous_key_hash);
          const validUntil = row.previous_valid_until!;
          writes.push(
            active && validUntil > now
              ? this.hotPath.set(previous, JSON.stringify(toKeyContext({ ...row, previous: true }, now)), validUntil)
              : this.hotPath.delete(previous),
          );
        }
        for (const keyHash of due) writes.push(this.hotPath.delete(this.hotPath.keyName(keyHash)));
        await Promise.all(writes);
        await this.removals.delete(manager, keyId, due);
        await this.keys.markSettled(manager, keyId);
        return true;
      });
    } catch (error) {
      this.logger.warn({ msg: 'key context sync deferred', key_id: keyId, ...errorFields(error) });
      return false;
    }
  }

  /**
   * One pass of the sync job over every key whose hot-path state is pending or that has a digest
   * due for removal (a grace that ended, whatever Redis's own expiry did), page after page by id (so
   * keys that keep failing never starve the ones after them); returns how many settled.
   */
  async reconcile(pageSize = 100): Promise<number> {
    let settled = 0;
    let after = '';
    for (;;) {
      const ids = await this.keys.unsettled(after, pageSize);
      await inLanes(ids.length, SYNC_CONCURRENCY, async (i) => {
        if (await this.sync(ids[i])) settled++;
      });
      if (ids.length < pageSize) return settled;
      after = ids[ids.length - 1];
    }
  }
}
