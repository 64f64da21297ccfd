import { DataSource, EntityManager } from 'typeorm';
import { Logger } from '@nestjs/common';
import { errorFields } from 'src/common/logging/error-fields';

export interface Tx {
  manager: EntityManager;
  /** Runs after a successful commit; its failure is logged and never fails the request. */
  afterCommit(task: () => Promise<unknown>): void;
}

const logger = new Logger('transaction');

/** Opens a transaction, runs `work`, commits, then runs the after-commit tasks in order. */
export async function inTransaction<T>(dataSource: DataSource, work: (tx: Tx) => Promise<T>): Promise<T> {
  const tasks: (() => Promise<unknown>)[] = [];
  const result = await dataSource.transaction((manager) => work({ manager, afterCommit: (task) => tasks.push(task) }));
  for (const task of tasks) {
    try {
      await task();
    } catch (error) {
      logger.warn({ msg: 'after-commit task failed', ...errorFields(error) });
    }
  }
  return result;
}
