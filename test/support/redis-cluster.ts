import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createClient, RedisClientType } from 'redis';

const run = promisify(execFile);

/** Most seconds a node may stay silent before the others count it failed (a paused node stays a master). */
const NODE_TIMEOUT_MS = 20_000;

interface ClusterNode {
  port: number;
  process: ChildProcess;
}

/** Resolves whether `port` can be bound on 127.0.0.1 now. */
function free(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port whose cluster bus port (+10000) is free too, drawn from 20000-54999 (far from 6379 and the ephemeral range). */
async function freePort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 35_000);
    if (!taken.has(port) && !taken.has(port + 10_000) && (await free(port)) && (await free(port + 10_000))) {
      taken.add(port);
      taken.add(port + 10_000);
      return port;
    }
  }
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`redis cluster: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * A local Redis Cluster for the tests: `masters` nodes (3 at least) and `replicas` per master, each
 * a `redis-server` on a free loopback port, data in a temporary directory, nothing persisted
 * (`--save "" --appendonly no`), built with `redis-cli --cluster create`. `stop()` ends every
 * node and removes the directory.
 */
export class RedisCluster {
  private readonly admin = new Map<number, RedisClientType>();
  /** Nodes killed by `kill` (left out of every check). */
  private readonly dead = new Set<number>();

  private constructor(
    private readonly nodes: ClusterNode[],
    private readonly dir: string,
  ) {}

  static async start(options: { masters?: number; replicas?: number } = {}): Promise<RedisCluster> {
    const masters = options.masters ?? 3;
    const replicas = options.replicas ?? 0;
    const dir = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
    const taken = new Set<number>();
    const nodes: ClusterNode[] = [];
    const cluster = new RedisCluster(nodes, dir);
    try {
      for (let i = 0; i < masters * (1 + replicas); i++) {
        const port = await freePort(taken);
        const data = join(dir, String(port));
        mkdirSync(data);
        const args = ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(NODE_TIMEOUT_MS), '--dir', data, '--save', '', '--appendonly', 'no', '--repl-diskless-sync-delay', '0', '--logfile', join(data, 'log')];
        nodes.push({ port, process: spawn('redis-server', args, { stdio: 'ignore' }) });
      }
      await Promise.all(nodes.map((n) => until(`node ${n.port}`, async () => (await cluster.client(n.port).ping()) === 'PONG')));
      await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes']);
      await cluster.settled();
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  /** The seed nodes, as REDIS_CLUSTER_NODES takes them. */
  get seeds(): string {
    return this.nodes.map((n) => `redis://127.0.0.1:${n.port}`).join(',');
  }

  /** Every node's port, masters and replicas. */
  get ports(): number[] {
    return this.nodes.map((n) => n.port);
  }

  /** A plain connection to one node (for CLUSTER commands and reading a node's own view). */
  client(port: number): RedisClientType {
    let client = this.admin.get(port);
    if (!client) {
      client = createClient({ url: `redis://127.0.0.1:${port}`, socket: { reconnectStrategy: 100 } });
      client.on('error', () => undefined);
      void client.connect().catch(() => undefined);
      this.admin.set(port, client);
    }
    return client;
  }

  /** Every node agrees the cluster is ok and every replica has synchronized with its master. */
  async settled(): Promise<void> {
    await until('cluster state ok', async () => {
      for (const port of this.live()) {
        const node = this.client(port);
        if (!(await node.clusterInfo()).includes('cluster_state:ok')) return false;
        const info = await node.info('replication');
        if (info.includes('role:slave') && !info.includes('master_link_status:up')) return false;
      }
      // Every node has seen the same slot map (no node still believes a demoted master owns slots).
      const slots = await Promise.all(this.live().map((port) => this.client(port).clusterSlots()));
      const maps = slots.map((m) => JSON.stringify(m));
      if (!maps.every((m) => m === maps[0])) return false;
      // ... and that map lists every live node, as a master or as a replica (a replica that has not
      // yet attached is missing from it, and a failover would find no replica to promote).
      const listed = new Set(slots[0].flatMap((r) => [r.master.port, ...r.replicas.map((x) => x.port)]));
      return this.live().every((port) => listed.has(port));
    });
  }

  /** The port of the master holding `key`'s slot and the ports of its replicas. */
  async shardOf(key: string): Promise<{ master: number; replicas: number[] }> {
    const any = this.client(this.live()[0]);
    const slot = await any.clusterKeySlot(key);
    const range = (await any.clusterSlots()).find((r) => r.from <= slot && slot <= r.to)!;
    return { master: range.master.port, replicas: range.replicas.map((r) => r.port) };
  }

  /**
   * Promotes a replica of the master holding `key` (CLUSTER FAILOVER on the replica; FORCE when the
   * master is gone, see `kill`); answers the new master's port.
   */
  async failover(key: string, options: { force?: boolean } = {}): Promise<number> {
    const { master, replicas } = await this.shardOf(key);
    const promoted = replicas.find((port) => !this.dead.has(port));
    if (promoted === undefined) throw new Error('redis cluster: no replica to promote (start with replicas)');
    await this.client(promoted).sendCommand(['CLUSTER', 'FAILOVER', ...(options.force ? ['FORCE'] : [])]);
    await until('failover', async () => (await this.shardOf(key)).master === promoted && (this.dead.has(master) || (await this.client(master).info('replication')).includes('role:slave')));
    await this.settled();
    return promoted;
  }

  /** Kills the node on `port` (SIGKILL): a crash; its data is gone with it. */
  async kill(port: number): Promise<void> {
    const node = this.nodes.find((n) => n.port === port)!;
    this.dead.add(port);
    this.admin.get(port)?.destroy();
    this.admin.delete(port);
    await new Promise<void>((resolve) => {
      node.process.once('exit', () => resolve());
      node.process.kill('SIGKILL');
    });
  }

  private live(): number[] {
    return this.nodes.map((n) => n.port).filter((port) => !this.dead.has(port));
  }

  /** Freezes (SIGSTOP) or resumes (SIGCONT) the node on `port`: its connections stay open and nothing answers. */
  pause(port: number, paused: boolean): void {
    this.nodes.find((n) => n.port === port)!.process.kill(paused ? 'SIGSTOP' : 'SIGCONT');
  }

  async stop(): Promise<void> {
    for (const client of this.admin.values()) client.destroy();
    await Promise.all(
      this.nodes.map(
        (n) =>
          new Promise<void>((resolve) => {
            if (n.process.exitCode !== null || n.process.signalCode !== null) return resolve();
            n.process.once('exit', () => resolve());
            n.process.kill('SIGCONT');
            n.process.kill('SIGKILL');
          }),
      ),
    );
    rmSync(this.dir, { recursive: true, force: true });
  }
}
