import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { monthKey, monthStart } from 'src/modules/streams/stream-projector';
import { ReadModelPartitionsRepository } from 'src/modules/streams/read-model-partitions.repository';

/** The month partitions this process knows to exist, so that a batch creates only the ones it lacks. */
@Injectable()
export class ReadModelPartitions {
  private readonly known = new Set<string>();

  constructor(private readonly partitions: ReadModelPartitionsRepository) {}

  async ensure(table: string, at: Date): Promise<void> {
    if (!this.known.has(`${table}:${monthKey(at)}`)) await this.create(table, at);
  }

  /**
   * Creates the month's partition unless it exists, in a statement of its own (never inside another
   * transaction; on the maintenance `session` when given); the cache lists it only once that has committed.
   */
  async create(table: string, at: Date, session?: EntityManager): Promise<void> {
    await this.partitions.ensure(table, monthStart(at), session);
    this.known.add(`${table}:${monthKey(at)}`);
  }

  /** The partition of `month` (`YYYY-MM`) is being dropped: the next batch dated in it creates it again. */
  forget(table: string, month: string): void {
    this.known.delete(`${table}:${month}`);
  }
}
