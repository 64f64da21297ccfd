import { Inject, Injectable } from '@nestjs/common';
import Redis from 'ioredis';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { REDIS } from 'src/database/redis.module';

/** Writes `snapshot` unless the stored one already has this or a newer version, then announces it. */
const WRITE_SNAPSHOT = `
local current = redis.call('GET', KEYS[1])
if current then
  local ok, decoded = pcall(cjson.decode, current)
  if ok and type(decoded) == 'table' and tonumber(decoded['version']) and tonumber(decoded['version']) >= tonumber(ARGV[2]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PUBLISH', KEYS[2], ARGV[3])
return 1
`;

/**
 * The gateway's hot path (CONTRACT.md 4.4): key contexts and published snapshots. Redis when
 * configured, else an in-process map. Every call may throw while Redis is down; callers that run
 * after commit treat that as "not published yet", never as a failed request.
 */
@Injectable()
export class HotPath {
  private readonly memory = new Map<string, string>();

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

  async get(name: string): Promise<string | null> {
    if (!this.redis) return this.memory.get(name) ?? null;
    return this.redis.get(name);
  }

  async set(name: string, value: string): Promise<void> {
    if (!this.redis) {
      this.memory.set(name, value);
      return;
    }
    await this.redis.set(name, value);
  }

  async delete(name: string): Promise<void> {
    if (!this.redis) {
      this.memory.delete(name);
      return;
    }
    await this.redis.del(name);
  }

  /** Stores the snapshot unless the hot path already holds this version or a newer one. */
  async writeSnapshot(workspaceId: string, version: number, json: string): Promise<void> {
    const name = this.snapshotName(workspaceId);
    if (!this.redis) {
      const current = this.memory.get(name);
      if (!current || (JSON.parse(current) as { version: number }).version < version) this.memory.set(name, json);
      return;
    }
    await this.redis.eval(WRITE_SNAPSHOT, 2, name, `${this.config.redisPrefix}:snapshots`, json, String(version), `${workspaceId}:${version}`);
  }
}
