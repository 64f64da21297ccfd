import { DataSource, EntityManager, EntityTarget, FindOptionsOrder, FindOptionsWhere } from 'typeorm';
import { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';

/** The columns every revisioned definition (`workers`, `workflows`) has. */
export interface DefinitionEntity {
  id: string;
  workspaceId: string;
  lifecycle: string;
  draftRevisionId: string | null;
  publishedRevisionId: string | null;
  latestRevisionNumber: number;
  createdAt: Date;
  updatedAt: Date;
}

/** The columns every revision (`worker_revisions`, `workflow_revisions`) has. */
export interface RevisionEntity {
  id: string;
  workspaceId: string;
  revisionNumber: number;
  state: string;
  revisionDigest: string | null;
  createdAt: Date;
  publishedAt: Date | null;
}

/**
 * The statements a revisioned definition and its revisions share (WorkersRepository and
 * WorkflowsRepository name the tables): the definition, its keyset page, its revisions, the
 * draft pointer and the publish. Every write takes the caller's manager (a workspace mutation).
 */
export abstract class RevisionedRepository<D extends DefinitionEntity, R extends RevisionEntity> {
  protected constructor(
    protected readonly dataSource: DataSource,
    private readonly definitions: EntityTarget<D>,
    private readonly revisionsOf: EntityTarget<R>,
    /** The revision column naming its definition. */
    private readonly parent: 'workerId' | 'workflowId',
  ) {}

  /** A definition of the workspace; `lock` takes it FOR UPDATE. */
  find(workspaceId: string, id: string, manager: EntityManager = this.dataSource.manager, lock = false): Promise<D | null> {
    const where = { workspaceId, id } as FindOptionsWhere<D>;
    return manager.findOne(this.definitions, { where, ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}) });
  }

  /** One page (`limit + 1` rows) in (created_at, id) order after `after`, optionally of one lifecycle. */
  page(workspaceId: string, after: { at: Date; id: string } | null, limit: number, lifecycle?: string): Promise<D[]> {
    const query = this.dataSource.manager.createQueryBuilder(this.definitions, 'd').where('d.workspaceId = :workspaceId', { workspaceId });
    if (lifecycle !== undefined) query.andWhere('d.lifecycle = :lifecycle', { lifecycle });
    // hand-written: keyset page over (created_at, id), a row-value comparison find options cannot express
    if (after) query.andWhere('(d.createdAt, d.id) > (:at, :id)', after);
    return query.orderBy('d.createdAt').addOrderBy('d.id').limit(limit + 1).getMany();
  }

  /** A revision of the definition, or null. */
  revision(workspaceId: string, parentId: string, id: string, manager: EntityManager = this.dataSource.manager): Promise<R | null> {
    return manager.findOneBy(this.revisionsOf, { workspaceId, [this.parent]: parentId, id } as FindOptionsWhere<R>);
  }

  /** Every revision of the definition, newest first. */
  revisions(workspaceId: string, parentId: string): Promise<R[]> {
    const where = { workspaceId, [this.parent]: parentId } as FindOptionsWhere<R>;
    return this.dataSource.manager.find(this.revisionsOf, { where, order: { revisionNumber: 'DESC' } as FindOptionsOrder<R> });
  }

  async insert(manager: EntityManager, row: Partial<D>): Promise<void> {
    await manager.insert(this.definitions, row as QueryDeepPartialEntity<D>);
  }

  async insertRevision(manager: EntityManager, row: Partial<R>): Promise<void> {
    await manager.insert(this.revisionsOf, row as QueryDeepPartialEntity<R>);
  }

  async updateRevision(manager: EntityManager, workspaceId: string, id: string, values: Partial<R>): Promise<void> {
    await manager.update(this.revisionsOf, { workspaceId, id } as FindOptionsWhere<R>, values as QueryDeepPartialEntity<R>);
  }

  /** Points the definition at its open draft and its latest revision number. */
  async pointDraft(manager: EntityManager, workspaceId: string, id: string, draftRevisionId: string, latestRevisionNumber: number): Promise<void> {
    const values = { draftRevisionId, latestRevisionNumber, updatedAt: () => 'clock_timestamp()' } as QueryDeepPartialEntity<D>;
    await manager.update(this.definitions, { workspaceId, id } as FindOptionsWhere<D>, values);
  }

  /** The published revision becomes `superseded`, `revisionId` `published` with its digest, and the definition points at it. */
  async publish(manager: EntityManager, workspaceId: string, id: string, revisionId: string, digest: string): Promise<void> {
    const live = { workspaceId, [this.parent]: id, state: 'published' } as FindOptionsWhere<R>;
    await manager.update(this.revisionsOf, live, { state: 'superseded' } as Partial<R> as QueryDeepPartialEntity<R>);
    const published = { state: 'published', revisionDigest: digest, publishedAt: () => 'clock_timestamp()' } as QueryDeepPartialEntity<R>;
    await manager.update(this.revisionsOf, { workspaceId, id: revisionId } as FindOptionsWhere<R>, published);
    const pointed = { lifecycle: 'published', publishedRevisionId: revisionId, draftRevisionId: null, updatedAt: () => 'clock_timestamp()' };
    await manager.update(this.definitions, { workspaceId, id } as FindOptionsWhere<D>, pointed as QueryDeepPartialEntity<D>);
  }
}
