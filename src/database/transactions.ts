import { Global, Injectable, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { inTransaction, Tx } from 'src/database/transaction';

/**
 * How a service opens a transaction without holding the data source: `run` hands `work` a `Tx`
 * whose `manager` it passes to the repositories it calls (every repository method that writes
 * takes the manager first), and whose after-commit tasks run once the commit has landed.
 */
@Injectable()
export class Transactions {
  constructor(private readonly dataSource: DataSource) {}

  run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return inTransaction(this.dataSource, work);
  }
}

@Global()
@Module({ providers: [Transactions], exports: [Transactions] })
export class TransactionsModule {}
