import * as pg from 'pg';
import { EventEmitter } from 'node:events';
import { QueryRunner } from 'typeorm';
import { connectionLost, READ_TIMEOUT_CODE } from 'src/database/unavailable';

/** How long the service waits on PostgreSQL (DATABASE_CONNECT_TIMEOUT_MS, DATABASE_STATEMENT_TIMEOUT_MS). */
export interface DatabaseBounds {
  /** Opening a connection, and waiting for a pooled one. */
  connectTimeoutMs: number;
  /** The server's `statement_timeout` of every session. */
  statementTimeoutMs: number;
}

/**
 * How much longer than its statement bound the client waits for an answer before it destroys the
 * connection: a live server cancels first (57014) and the connection stays; a server that stopped
 * answering (a partition, a stalled primary) is cut off here.
 */
export const READ_MARGIN_MS = 1000;

type QueryConfig = string | { text: string; name?: string; values?: unknown[]; submit?: unknown };
type Callback = (error: Error | null, result?: unknown) => void;

/** pg's own query, through its untyped form (its dozen typed overloads cannot be forwarded). */
const pgQuery = pg.Client.prototype.query as (this: pg.Client, ...args: unknown[]) => unknown;

/** A plain read, which may run again on another connection: a SELECT that takes no session lock. */
const plainRead = (config: QueryConfig) => {
  const text = typeof config === 'string' ? config : config.text;
  return /^\s*select\b/i.test(text) && !/advisory/i.test(text);
};

/**
 * A pg client that never waits on the server forever: every query has a read bound (its statement
 * bound plus READ_MARGIN_MS), after which the connection is destroyed, failing what was sent on it
 * with READ_TIMEOUT_CODE; pg-pool never hands a destroyed connection out again. A plain read sent
 * outside a transaction that fails because the connection was lost (terminated by the server, reset)
 * runs once more on a fresh connection of the pool.
 */
export class BoundedClient extends pg.Client {
  /** The bound of this connection's answers (0: none); raised for a transaction by `allowLongerStatements`. */
  readBoundMs: number;
  readonly defaultReadBoundMs: number;
  /** The pool this client belongs to (set when the pool connects it), for the one retry. */
  retryPool?: BoundedPool;
  /** The transaction status of the last ReadyForQuery: true outside a transaction. */
  private idle = true;

  constructor(config: pg.PoolConfig & { readBoundMs: number }) {
    super(config);
    this.readBoundMs = this.defaultReadBoundMs = config.readBoundMs;
    (this.connection as unknown as EventEmitter).on('readyForQuery', (message: { status: string }) => (this.idle = message.status === 'I'));
    // pg's query has a dozen overloads: one implementation serves the two forms used here
    // (a promise, or a callback last, which pg-pool's `query` uses).
    this.query = ((config: QueryConfig, values?: unknown, callback?: Callback) => {
      if (typeof config === 'object' && typeof config.submit === 'function') return pgQuery.call(this, config, values, callback);
      if (typeof values === 'function') [values, callback] = [undefined, values as Callback];
      const result = this.run(config, values as unknown[] | undefined, true);
      if (!callback) return result;
      result.then((answer) => callback(null, answer), (error: Error) => callback(error));
      return undefined;
    }) as pg.Client['query'];
  }

  /** Sends one query under the read bound; `retry`: a plain read that lost its connection runs once more elsewhere. */
  run(config: QueryConfig, values: unknown[] | undefined, retry: boolean): Promise<unknown> {
    const outsideTransaction = this.idle;
    const timer = this.readBoundMs > 0 ? setTimeout(() => this.cutOff(), this.readBoundMs) : undefined;
    const sent = pgQuery.call(this, config, values) as Promise<unknown>;
    return sent.then(
      (answer) => {
        clearTimeout(timer);
        return answer;
      },
      (error: unknown) => {
        clearTimeout(timer);
        if (retry && outsideTransaction && this.retryPool && connectionLost(error) && plainRead(config)) return this.retryPool.retryRead(config, values);
        throw error;
      },
    );
  }

  private cutOff(): void {
    const error = Object.assign(new Error('database answer exceeded its bound'), { code: READ_TIMEOUT_CODE });
    (this.connection as unknown as { stream: { destroy(error: Error): void } }).stream.destroy(error);
  }
}

type PooledClient = BoundedClient & pg.PoolClient;
const pooled = (client: unknown) => client as PooledClient;

/** pg's pool of BoundedClients; a client handed out always starts with the default read bound. */
export class BoundedPool extends pg.Pool {
  constructor(options: pg.PoolConfig & { readBoundMs: number }) {
    super({ ...options, Client: BoundedClient as unknown as pg.PoolConfig['Client'] });
    this.on('connect', (client) => (pooled(client).retryPool = this));
    this.on('acquire', (client) => (pooled(client).readBoundMs = pooled(client).defaultReadBoundMs));
  }

  /**
   * One query on a pooled connection (a plain read retried once if its connection was lost). Unlike
   * pg-pool's `query`, a connection that fails under the query does not answer before the retry.
   */
  async run<T>(config: QueryConfig, values: unknown[] | undefined, retry = true): Promise<{ rows: T[] }> {
    const client = pooled(await this.connect());
    // Its error is the query's; a lost connection is not queryable and leaves the pool on release.
    const ignore = () => undefined;
    client.on('error', ignore);
    try {
      return (await client.run(config, values, retry)) as { rows: T[] };
    } finally {
      client.removeListener('error', ignore);
      client.release();
    }
  }

  /**
   * The one retry of a plain read, on a connection opened for it: the pool's idle ones may have
   * been terminated together with the lost one, their notice not yet read.
   */
  async retryRead(config: QueryConfig, values: unknown[] | undefined): Promise<unknown> {
    const client = new BoundedClient(this.options as pg.PoolConfig & { readBoundMs: number });
    client.on('error', () => undefined); // its error is the query's
    try {
      await client.connect();
      return await client.run(config, values, false);
    } finally {
      client.end().catch(() => undefined);
    }
  }
}

/** The pg module TypeORM builds its pool from (its `driver` option), with the bounded pool. */
export const boundedPg = { ...pg, Pool: BoundedPool };

/**
 * For work that legitimately runs longer than DATABASE_STATEMENT_TIMEOUT_MS (a replay page, a
 * partition detach): raises the statement bound of `runner`'s connection to `ms`, on the server
 * and in the client. `transaction`: for the rest of the open transaction (SET LOCAL); `session`:
 * until `RESET statement_timeout`, which the caller sends before releasing the runner. The client's
 * bound returns to the default when the pool hands the connection out again.
 */
export async function allowLongerStatements(runner: QueryRunner, ms: number, scope: 'transaction' | 'session'): Promise<void> {
  await runner.query(`SET ${scope === 'transaction' ? 'LOCAL ' : ''}statement_timeout = ${Math.floor(ms)}`);
  const client: unknown = await runner.connect();
  if (client instanceof BoundedClient) client.readBoundMs = ms + READ_MARGIN_MS;
}
