import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { allowLongerStatements } from 'src/database/bounded-driver';

/** A month table of a partitioned read model table, as the catalog lists it. */
export interface MonthTable {
  name: string;
  /** Still attached to its parent. */
  attached: boolean;
  /** Attached with a detach that was interrupted (DETACH ... CONCURRENTLY that did not finish). */
  pending: boolean;
}

const MAINTENANCE_LOCK = `hashtext('read_model_maintenance')`;

/**
 * The month partitions of the read models' partitioned tables (`usage_events`, `receipt_revisions`,
 * whose rows belong to usage and receipts: this repository names no table, only the parent it is
 * given) and the maintenance session that keeps them. Every statement is hand-written: partition
 * DDL, the catalog and session settings have no entity API.
 */
@Injectable()
export class ReadModelPartitionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Creates the month's partition of `table` unless it exists, in a statement of its own (on its
   * own connection, or on the maintenance `session`: never inside another transaction).
   */
  async ensure(table: string, month: Date, session: EntityManager = this.dataSource.manager): Promise<void> {
    // hand-written: the migration's partition function (CREATE TABLE ... PARTITION OF under an advisory lock).
    await session.query(`SELECT read_model_ensure_partition($1, $2::date)`, [table, month.toISOString().slice(0, 10)]);
  }

  /**
   * Runs `work` on a connection of its own holding the maintenance advisory lock for the session,
   * with MAINTENANCE_STATEMENT_TIMEOUT_MS as its statement bound; null (and `work` not run) when
   * another replica holds the lock. A session lock, not a transaction kept open: DETACH ...
   * CONCURRENTLY waits for every transaction that could still see the partition, an open one of
   * ours included. Every step runs on that connection (the embedded database has a pool of one).
   */
  async withMaintenanceSession<T>(statementTimeoutMs: number, work: (session: EntityManager) => Promise<T>): Promise<T | null> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      // For the session; reset before the connection returns to the pool.
      await allowLongerStatements(runner, statementTimeoutMs, 'session');
      // hand-written: a session-level advisory lock (one maintenance run across replicas).
      const [{ locked }]: { locked: boolean }[] = await runner.query(`SELECT pg_try_advisory_lock(${MAINTENANCE_LOCK}) AS locked`);
      if (!locked) return null;
      try {
        return await work(runner.manager);
      } finally {
        await runner.query(`SELECT pg_advisory_unlock(${MAINTENANCE_LOCK})`);
      }
    } finally {
      await runner.query('RESET statement_timeout').catch(() => undefined);
      await runner.release();
    }
  }

  /**
   * The month tables of `parent` (`<parent>_pYYYYMM`): attached, pending a detach that was
   * interrupted, or already detached by a run that stopped before dropping them.
   */
  monthTables(session: EntityManager, parent: string): Promise<MonthTable[]> {
    // hand-written: the catalog (pg_class, pg_inherits).
    return session.query(
      `SELECT c.relname AS name, i.inhrelid IS NOT NULL AS attached, coalesce(i.inhdetachpending, false) AS pending
       FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = $1::regclass
       WHERE c.relkind = 'r' AND c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = $1::regclass) AND c.relname ~ ('^' || $1 || '_p[0-9]{6}$')`,
      [parent],
    );
  }

  /**
   * Detaches the partition concurrently (SHARE UPDATE EXCLUSIVE on the parent: ingestion and reads
   * go on; it waits for the transactions that still see the partition), then drops the table,
   * which nothing reaches any more. An interrupted detach is finished with FINALIZE.
   */
  async drop(session: EntityManager, parent: string, table: MonthTable): Promise<void> {
    // hand-written: partition DDL (names from the catalog, never from input).
    if (table.attached) await session.query(`ALTER TABLE "${parent}" DETACH PARTITION "${table.name}" ${table.pending ? 'FINALIZE' : 'CONCURRENTLY'}`);
    await session.query(`DROP TABLE IF EXISTS "${table.name}"`);
  }

  /**
   * One retention transaction on the maintenance session. Its commit does not wait for the WAL
   * flush: a deletion lost in a crash is done again by the next run, and the commit spares
   * ingestion's commits one flush per workspace.
   */
  retentionTransaction<T>(session: EntityManager, work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return session.transaction(async (manager) => {
      // hand-written: a transaction-local setting.
      await manager.query(`SET LOCAL synchronous_commit = off`);
      return work(manager);
    });
  }
}
