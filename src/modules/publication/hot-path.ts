import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { REDIS, Redis, redisDeadline } from 'src/database/redis.module';

/**
 * Writes the snapshot (ARGV[1], version ARGV[2]) unless the stored one already has this or a newer
 * version, then announces `ws:version:digest` (ARGV[4]) on channel ARGV[3]. One key, so it is safe on a
 * Redis Cluster, where the script runs on the node holding the key and its PUBLISH reaches the
 * subscribers of every node (cluster PUBLISH is forwarded over the cluster bus).
 */
const WRITE_SNAPSHOT = `
local current = redis.call('GET', KEYS[1])
if current then
  local ok, decoded = pcall(cjson.decode, current)
  if ok and type(decoded) == 'table' and tonumber(decoded['version']) and tonumber(decoded['version']) >= tonumber(ARGV[2]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
`;

interface MemoryEntry {
  value: string;
  /** Epoch milliseconds after which the entry is gone; null = no expiry. */
  expiresAt: number | null;
}

/**
 * The gateway's hot path (CONTRACT.md 4.4): key contexts and published snapshots. Redis when
 * configured, else an in-process map. Every call may throw while Redis is down or slow (no answer
 * within REDIS_TIMEOUT_MS); callers that run after commit treat that as "not published yet",
 * never as a failed request.
 */
@Injectable()
export class HotPath {
  private readonly memory = new Map<string, MemoryEntry>();

  constructor(
    @Inject(REDIS) private readonly redis: Redis | null,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  keyName(keyHash: string): string {
    return `${this.config.redisPrefix}:key:${keyHash}`;
  }

  snapshotName(workspaceId: string): string {
    return `${this.config.redisPrefix}:snapshot:${workspaceId}`;
  }

  snapshotChannel(): string {
    return `${this.config.redisPrefix}:snapshots`;
  }

  async get(name: string): Promise<string | null> {
    if (this.redis) return redisDeadline(this.redis.get(name));
    const entry = this.memory.get(name);
    if (!entry) return null;
    if (entry.expiresAt !== null && entry.expiresAt <= Date.now()) {
      this.memory.delete(name);
      return null;
    }
    return entry.value;
  }

  /** Stores `value`; with `expiresAt` the entry disappears at that instant (Redis `PXAT`). */
  async set(name: string, value: string, expiresAt: Date | null = null): Promise<void> {
    if (!this.redis) {
      this.memory.set(name, { value, expiresAt: expiresAt?.getTime() ?? null });
      return;
    }
    await redisDeadline(this.redis.set(name, value, expiresAt ? { expiration: { type: 'PXAT', value: expiresAt.getTime() } } : undefined));
  }

  async delete(name: string): Promise<void> {
    if (!this.redis) {
      this.memory.delete(name);
      return;
    }
    await redisDeadline(this.redis.del(name));
  }

  /** Stores the snapshot unless the hot path already holds this version or a newer one, and announces it. */
  async writeSnapshot(workspaceId: string, version: number, json: string, digest: string): Promise<void> {
    const name = this.snapshotName(workspaceId);
    if (!this.redis) {
      const current = this.memory.get(name);
      if (!current || (JSON.parse(current.value) as { version: number }).version < version) this.memory.set(name, { value: json, expiresAt: null });
      return;
    }
    await redisDeadline(this.redis.eval(WRITE_SNAPSHOT, { keys: [name], arguments: [json, String(version), this.snapshotChannel(), `${workspaceId}:${version}:${digest}`] }));
  }
}
