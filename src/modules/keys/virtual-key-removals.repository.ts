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
export const PENDING_DIGESTS = `
  SELECT 'k' AS kind, id AS key_id, key_hash AS digest, previous_key_hash AS previous FROM virtual_keys WHERE hot_path_pending
  UNION ALL
  SELECT 'r', NULL, key_hash, NULL FROM virtual_key_removals`;
