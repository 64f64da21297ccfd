import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Price } from 'src/modules/model-providers/dto/pricing.document';
import { Pricebook } from 'src/modules/model-providers/entities/pricebook.entity';

/** Every statement on `pricebooks` (one row per workspace, replaced as a whole). */
@Injectable()
export class PricebooksRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The workspace's pricebook, read in `manager` (the snapshot's consistent read) or on the pool. */
  async find(workspaceId: string, manager: EntityManager = this.dataSource.manager): Promise<Pricebook | undefined> {
    return (await manager.findOneBy(Pricebook, { workspaceId })) ?? undefined;
  }

  /**
   * Replaces the pricebook (revision + 1, or revision 1 when there was none) and returns the stored
   * row. The caller holds the workspace lock, so nothing can create the row between the locked find
   * and the insert.
   */
  async replace(manager: EntityManager, workspaceId: string, prices: Price[], updatedBy: string): Promise<Pricebook> {
    const pricebooks = manager.getRepository(Pricebook);
    const key = { workspaceId };
    const current = await pricebooks.findOne({ select: { revision: true }, where: key, lock: { mode: 'pessimistic_write' } });
    if (current) await pricebooks.update(key, { revision: current.revision + 1, prices, updatedBy, updatedAt: () => 'clock_timestamp()' });
    else await pricebooks.insert({ ...key, revision: 1, prices, updatedBy });
    return pricebooks.findOneByOrFail(key);
  }
}
