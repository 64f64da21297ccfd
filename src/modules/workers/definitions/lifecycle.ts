import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { isUniqueViolation } from 'src/database/errors';
import { Tx } from 'src/database/transaction';
import { PublishDto } from 'src/modules/workers/definitions/dto/workers.dto';
import { DefinitionEntity, RevisionedRepository, RevisionEntity } from 'src/modules/workers/definitions/revisioned.repository';
import { cursorPosition, page } from 'src/modules/workers/paging';
import { capabilitiesFor, DetailObjectError } from 'src/modules/workers/workers.common';

/**
 * What makes a revisioned resource (a Worker, a workflow) itself: its names, its store, what a
 * revision holds (`C`, the content a create or an edit produces) and how it is digested.
 */
export interface RevisionedResource<D extends DefinitionEntity, R extends RevisionEntity, C> {
  /** `worker`, `workflow`: the subject of the messages (`worker not found`, `workflow slug already exists`). */
  name: string;
  /** The list key and cursor scope (`workers`), the answer key is `name`. */
  plural: string;
  prefixes: { definition: string; revision: string };
  repository: RevisionedRepository<D, R>;
  toDocument(definition: D): object;
  toRevisionDocument(revision: R): object;
  /** The row of a new draft revision holding `content`. */
  draft(tx: Tx, ws: WorkspaceContext, at: { definitionId: string; revisionId: string; number: number }, content: C): Promise<Partial<R>>;
  /** What rewriting the open draft with `content` changes. */
  rewrite(tx: Tx, ws: WorkspaceContext, content: C): Promise<Partial<R>>;
  digest(revision: R): string;
  /** Refuses a revision whose pins held but that cannot go live (the workflow graph). */
  publishable?(tx: Tx, ws: WorkspaceContext, revision: R): Promise<void>;
  /** Fields the publish answer's `after` adds for this resource. */
  published?(revision: R): Record<string, unknown>;
}

/**
 * The draft / publish lifecycle both revisioned resources share. Every write runs under the
 * workspace lock with the definition row locked, so writes in one workspace are serialized: a
 * slug is claimed once, a publish pin is compared with the value no concurrent publish can move.
 * Edits land on the open draft; with none open, a new draft is cut (revision number + 1).
 */
export class RevisionedLifecycle<D extends DefinitionEntity, R extends RevisionEntity, C> {
  constructor(
    private readonly access: WorkspaceAccess,
    private readonly resource: RevisionedResource<D, R, C>,
  ) {}

  /** The definition (locked with `lock`); 404 `<name> not found` otherwise. */
  async definition(workspaceId: string, id: string, manager?: Tx['manager'], lock = false): Promise<D> {
    const row = await this.resource.repository.find(workspaceId, id, manager, lock);
    if (!row) throw new ApiError(404, `${this.resource.name} not found`);
    return row;
  }

  /** A new definition (`fields`: its columns beyond the shared ones) and its draft v1 holding `content`. */
  create(ctx: WorkspaceContext, fields: (ws: WorkspaceContext) => Partial<D>, content: C, check?: (tx: Tx, ws: WorkspaceContext) => Promise<void>) {
    const { repository, prefixes, name } = this.resource;
    return this.access.mutate(ctx, async (tx, ws) => {
      if (check) await check(tx, ws);
      const definitionId = newId(prefixes.definition);
      const revisionId = newId(prefixes.revision);
      const row = {
        id: definitionId,
        workspaceId: ws.id,
        ...fields(ws),
        lifecycle: 'draft',
        draftRevisionId: revisionId,
        latestRevisionNumber: 1,
        createdByUserId: ws.operator.userId,
        createdByDisplayName: ws.operator.email,
      } as Partial<D>;
      try {
        await repository.insert(tx.manager, row);
      } catch (error) {
        if (isUniqueViolation(error)) throw new ApiError(409, `${name} slug already exists`);
        throw error;
      }
      await repository.insertRevision(tx.manager, await this.resource.draft(tx, ws, { definitionId, revisionId, number: 1 }, content));
      return { schema_version: 1, resource_id: definitionId, before: null, after: { lifecycle: 'draft', draft_revision_id: revisionId, revision_number: 1 } };
    });
  }

  async list(ws: WorkspaceContext, q: { cursor?: string; limit: number; lifecycle?: string }) {
    const scope = `${this.resource.plural}:${ws.id}`;
    const rows = await this.resource.repository.page(ws.id, cursorPosition(scope, q.cursor), q.limit, q.lifecycle);
    const result = page(scope, rows, q.limit);
    return { [this.resource.plural]: result.rows.map((r) => this.resource.toDocument(r)), next_cursor: result.next_cursor, capabilities: capabilitiesFor(ws) };
  }

  async get(ws: WorkspaceContext, id: string) {
    return { [this.resource.name]: this.resource.toDocument(await this.definition(ws.id, id)), capabilities: capabilitiesFor(ws) };
  }

  /** `edit` checks the locked definition and returns the draft's new content. */
  patch(ctx: WorkspaceContext, id: string, edit: (tx: Tx, ws: WorkspaceContext, definition: D) => Promise<C>) {
    const { repository, prefixes } = this.resource;
    return this.access.mutate(ctx, async (tx, ws) => {
      const definition = await this.definition(ws.id, id, tx.manager, true);
      const content = await edit(tx, ws, definition);
      const open = definition.draftRevisionId;
      const before = { draft_revision_id: open, revision_number: open ? definition.latestRevisionNumber : null };
      let revisionId = open;
      let number = definition.latestRevisionNumber;
      if (revisionId) {
        await repository.updateRevision(tx.manager, ws.id, revisionId, await this.resource.rewrite(tx, ws, content));
      } else {
        revisionId = newId(prefixes.revision);
        number += 1;
        await repository.insertRevision(tx.manager, await this.resource.draft(tx, ws, { definitionId: id, revisionId, number }, content));
      }
      await repository.pointDraft(tx.manager, ws.id, id, revisionId, number);
      return { schema_version: 1, resource_id: id, before, after: { draft_revision_id: revisionId, revision_number: number } };
    });
  }

  async versions(ws: WorkspaceContext, id: string) {
    await this.definition(ws.id, id);
    const rows = await this.resource.repository.revisions(ws.id, id);
    return { revisions: rows.map((r) => this.resource.toRevisionDocument(r)), capabilities: capabilitiesFor(ws) };
  }

  /**
   * Publishes the named draft when the three pins hold: the revision is still a draft (else
   * `<name>_revision_already_published`), the live revision is the one the caller believes
   * (else `published_revision_moved`), and the digest matches (else the mismatch object).
   */
  publish(ctx: WorkspaceContext, id: string, dto: PublishDto) {
    const { repository, name } = this.resource;
    return this.access.mutate(ctx, async (tx, ws) => {
      const definition = await this.definition(ws.id, id, tx.manager, true);
      const revision = await repository.revision(ws.id, id, dto.revision_id, tx.manager);
      if (!revision) throw new ApiError(404, 'revision not found');
      if (revision.state !== 'draft') throw new ApiError(409, `${name}_revision_already_published`);
      if (definition.publishedRevisionId !== dto.expected_published_revision_id) throw new ApiError(409, 'published_revision_moved');
      const digest = this.resource.digest(revision);
      if (digest !== dto.revision_digest) throw new DetailObjectError(409, { revision_id: revision.id, expected: digest });
      if (this.resource.publishable) await this.resource.publishable(tx, ws, revision);
      await repository.publish(tx.manager, ws.id, id, revision.id, digest);
      return {
        schema_version: 1,
        resource_id: id,
        before: { lifecycle: definition.lifecycle, published_revision_id: definition.publishedRevisionId },
        after: {
          lifecycle: 'published',
          published_revision_id: revision.id,
          revision_number: revision.revisionNumber,
          revision_digest: digest,
          ...this.resource.published?.(revision),
        },
      };
    });
  }
}
