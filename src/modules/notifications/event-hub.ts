import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { RedisClientType } from 'redis';
import { errorFields } from 'src/common/logging/error-fields';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { REDIS, redisDeadline } from 'src/database/redis.module';

/** A committed message as the event streams receive it. */
export interface HubMessage {
  workspace_id: string;
  id: string;
  type: string;
  body: string;
}

/** A stream's hold on its workspace's messages. */
export interface Listening {
  /** Settles once every replica knows a stream of this workspace is open here (never rejects). */
  ready: Promise<void>;
  stop(): void;
}

/**
 * What the replicas tell each other of the workspaces their streams listen to, on the control
 * channel: `hello` (a process subscribed: who listens to what?), `listen` (streams of these
 * workspaces are open on `from`; with a nonce, acknowledge), `quit` (no longer), `ack` (to `to`,
 * with the workspaces the acknowledging process listens to).
 */
type Control =
  | { op: 'hello'; from: string; nonce: string }
  | { op: 'listen'; from: string; ws: string[]; nonce?: string }
  | { op: 'quit'; from: string; ws: string[] }
  | { op: 'ack'; from: string; to: string; nonce: string; ws: string[] };

/** How often a process renews what it listens to, and says hello again while it does not know all. */
const INTEREST_RENEW_MS = 10_000;
/** A process's interest in a workspace lapses when not renewed for this long (the process died). */
const INTEREST_LAPSE_MS = 3 * INTEREST_RENEW_MS;
/** How long a question on the control channel waits for every other replica's answer. */
const ANSWER_MS = 1000;

/**
 * Carries committed messages to the event streams of every replica: Redis pub/sub when Redis is
 * configured (each process subscribes once on its own connection), in-process otherwise (the
 * embedded default is a single process).
 *
 * A message is published only while a stream of its workspace is open on some replica: an act
 * whose workspace nobody watches live spends no Redis round trip on it. Each process knows who
 * listens to what from the control channel: a stream's first hold on a workspace is acknowledged
 * by every other replica before the stream reports open, so a message committed after that is
 * published by whichever replica commits it; a process that has not heard every replica's answer
 * to its hello (just started, or resubscribed after an outage) publishes every message, as does
 * the one whose subscription is down. Who "every replica" is: the registry hash, where each
 * process renews its lease (a PUBLISH's count of receivers would do on one Redis, not on a
 * cluster, whose nodes count only their own subscribers).
 */
@Injectable()
export class EventHub implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('notifications');
  private readonly local = new EventEmitter().setMaxListeners(0);
  private subscriber: RedisClientType | null = null;
  private readonly channel: string;
  private readonly controlChannel: string;
  /** The replicas whose subscriptions answer on the control channel: process, when its lease lapses (ms). */
  private readonly registry: string;
  private readonly self = randomUUID();
  /** The workspaces streams of other processes listen to: workspace, process, when that lapses. */
  private readonly others = new Map<string, Map<string, number>>();
  /** Whether `others` is known whole (every replica answered this process's hello). */
  private known = false;
  /** Questions awaiting answers, by nonce. */
  private readonly asking = new Map<string, { answered: (from: string) => void }>();
  /** Counts the subscription's (re)connections: a hello answered across one does not make `others` known. */
  private connections = 0;
  /** The workspaces this process listens to, with their announcement. */
  private readonly announced = new Map<string, Promise<void>>();
  private renewal: NodeJS.Timeout | undefined;

  constructor(
    @Inject(REDIS) private readonly redis: RedisClientType | null,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.channel = `${config.redisPrefix}:notifications`;
    this.controlChannel = `${config.redisPrefix}:notifications:listeners`;
    this.registry = `${config.redisPrefix}:notifications:replicas`;
  }

  async onModuleInit(): Promise<void> {
    if (!this.redis) return;
    const subscriber = this.redis.duplicate();
    this.subscriber = subscriber;
    subscriber.on('error', () => undefined); // the main client logs outages
    // Whatever was said while the subscription was down is unknown: ask again, and tell again
    // (node-redis has subscribed again by then; the first connection asks once it has subscribed).
    subscriber.on('ready', () => {
      this.known = false;
      if (++this.connections > 1) this.renew();
    });
    const ready = subscriber
      .connect()
      .then(() => subscriber.subscribe(this.channel, (text) => this.deliver(JSON.parse(text) as HubMessage)))
      .then(() => subscriber.subscribe(this.controlChannel, (text) => this.heard(JSON.parse(text) as Control)))
      .then(() => this.lease())
      .then(() => this.hello());
    this.renewal = setInterval(() => this.renew(), INTEREST_RENEW_MS).unref();
    await redisDeadline(ready).catch((error: unknown) => this.logger.warn({ msg: 'event stream subscription pending', ...errorFields(error) }));
  }

  onApplicationShutdown(): void {
    clearInterval(this.renewal);
    if (this.redis) {
      redisDeadline(this.redis.hDel(this.registry, this.self)).catch(() => undefined);
      if (this.announced.size > 0) this.say({ op: 'quit', from: this.self, ws: [...this.announced.keys()] }).catch(() => undefined);
    }
    this.subscriber?.destroy();
  }

  /** To every open stream of the message's workspace, on any replica (none open: nothing is sent). */
  async publish(message: HubMessage): Promise<void> {
    if (!this.redis) return this.deliver(message);
    if (!this.listened(message.workspace_id)) return;
    await redisDeadline(this.redis.publish(this.channel, JSON.stringify(message)));
  }

  /** Calls `listener` with every message of the workspace until `stop`. */
  listen(workspaceId: string, listener: (m: HubMessage) => void): Listening {
    this.local.on(workspaceId, listener);
    let ready = this.announced.get(workspaceId);
    if (!ready) {
      ready = this.redis ? this.ask({ op: 'listen', from: this.self, ws: [workspaceId], nonce: randomUUID() }).then(() => undefined) : Promise.resolve();
      this.announced.set(workspaceId, ready);
    }
    return {
      ready,
      stop: () => {
        this.local.off(workspaceId, listener);
        if (this.local.listenerCount(workspaceId) > 0 || !this.announced.delete(workspaceId) || !this.redis) return;
        this.say({ op: 'quit', from: this.self, ws: [workspaceId] }).catch(() => undefined);
      },
    };
  }

  private deliver(message: HubMessage): void {
    this.local.emit(message.workspace_id, message);
  }

  /** Whether some replica may hold a stream of the workspace. */
  private listened(workspaceId: string): boolean {
    if (!this.known || !this.subscriber?.isReady || this.announced.has(workspaceId)) return true;
    const now = Date.now();
    for (const lapses of this.others.get(workspaceId)?.values() ?? []) if (lapses > now) return true;
    return false;
  }

  private async hello(): Promise<void> {
    const connection = this.connections;
    const known = await this.ask({ op: 'hello', from: this.self, nonce: randomUUID() });
    if (connection === this.connections) this.known = known;
  }

  /** Renews this process's lease and interest, forgets what lapsed, and asks again while it does not know all. */
  private renew(): void {
    const now = Date.now();
    for (const [workspaceId, processes] of this.others) {
      for (const [process, lapses] of processes) if (lapses <= now) processes.delete(process);
      if (processes.size === 0) this.others.delete(workspaceId);
    }
    this.lease().catch(() => undefined);
    if (this.announced.size > 0) this.say({ op: 'listen', from: this.self, ws: [...this.announced.keys()] }).catch(() => undefined);
    if (!this.known) void this.hello();
  }

  /** Registers (or renews) this process among the replicas, and drops the leases that lapsed. */
  private async lease(): Promise<void> {
    const now = Date.now();
    await redisDeadline(this.redis!.hSet(this.registry, this.self, String(now + INTEREST_LAPSE_MS)));
    const { lapsed } = await this.replicas(now);
    if (lapsed.length > 0) await redisDeadline(this.redis!.hDel(this.registry, lapsed));
  }

  /** The registered replicas (this process too) whose leases are live at `now`, and those whose leases lapsed. */
  private async replicas(now: number): Promise<{ live: string[]; lapsed: string[] }> {
    const all = await redisDeadline(this.redis!.hGetAll(this.registry));
    const live: string[] = [];
    const lapsed: string[] = [];
    for (const [process, lapses] of Object.entries(all)) (Number(lapses) > now ? live : lapsed).push(process);
    return { live, lapsed };
  }

  private heard(m: Control): void {
    if (m.from === this.self) return;
    switch (m.op) {
      case 'hello':
        this.answer(m.from, m.nonce);
        break;
      case 'listen':
        for (const ws of m.ws) this.note(ws, m.from);
        if (m.nonce) this.answer(m.from, m.nonce);
        break;
      case 'quit':
        for (const ws of m.ws) this.others.get(ws)?.delete(m.from);
        break;
      case 'ack':
        if (m.to !== this.self) break;
        for (const ws of m.ws) this.note(ws, m.from);
        this.asking.get(m.nonce)?.answered(m.from);
        break;
    }
  }

  private note(workspaceId: string, process: string): void {
    let processes = this.others.get(workspaceId);
    if (!processes) this.others.set(workspaceId, (processes = new Map()));
    processes.set(process, Date.now() + INTEREST_LAPSE_MS);
  }

  private answer(to: string, nonce: string): void {
    this.say({ op: 'ack', from: this.self, to, nonce, ws: [...this.announced.keys()] }).catch((error: unknown) => this.logger.warn({ msg: 'event stream answer failed', ...errorFields(error) }));
  }

  private say(m: Control): Promise<unknown> {
    return redisDeadline(this.redis!.publish(this.controlChannel, JSON.stringify(m)));
  }

  /**
   * Asks every other registered replica (read before asking: one registered later asks for itself);
   * true once each has answered, false when one has not within ANSWER_MS (or Redis failed).
   */
  private async ask(m: Control & { nonce: string }): Promise<boolean> {
    const answered = new Set<string>();
    let due: string[] | null = null;
    let done!: (all: boolean) => void;
    const all = new Promise<boolean>((resolve) => (done = resolve));
    const check = () => due !== null && due.every((process) => answered.has(process)) && done(true);
    // Registered before the question goes out: an answer may come back before the PUBLISH's own reply.
    this.asking.set(m.nonce, { answered: (from) => (answered.add(from), check()) });
    const timer = setTimeout(() => done(false), ANSWER_MS);
    try {
      due = (await this.replicas(Date.now())).live.filter((process) => process !== this.self);
      await this.say(m);
      check();
      return await all;
    } catch (error) {
      this.logger.warn({ msg: 'event stream announcement failed', ...errorFields(error) });
      return false;
    } finally {
      clearTimeout(timer);
      this.asking.delete(m.nonce);
    }
  }
}
