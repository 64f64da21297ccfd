import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Policy } from 'src/modules/policy/entities/policy.entity';
import { PolicyRevision } from 'src/modules/policy/entities/policy-revision.entity';

/** The draft, its current revision and whether the draft was ever published, read together. */
export interface PolicyStateRow {
  policy_id: string | null;
  cedar_text: string | null;
  draft_hash: string | null;
  draft_updated_at: Date | null;
  current_revision_id: string | null;
  published_at: Date | null;
  bundle_hash: string | null;
  draft_published: boolean;
}

/** A published revision as the snapshot, the overview and the policy routes read it. */
export interface RevisionRow {
  id: string;
  cedar_text: string;
  draft_hash: string;
  bundle_hash: string;
  entities: unknown[];
  published_at: Date;
}

/** One statement: the draft, its current revision and the workspace's publication counters read together. */
const STATE = `
  SELECT p.id AS policy_id, p.cedar_text, p.draft_hash, p.draft_updated_at, p.current_revision_id,
         r.published_at, r.bundle_hash,
         EXISTS (SELECT 1 FROM policy_revisions v WHERE v.workspace_id = p.workspace_id AND v.draft_hash = p.draft_hash) AS draft_published
  FROM policies p
  LEFT JOIN policy_revisions r ON r.workspace_id = p.workspace_id AND r.id = p.current_revision_id
  WHERE p.workspace_id = $1`;

const CURRENT_REVISION = `
  SELECT r.id, r.cedar_text, r.draft_hash, r.bundle_hash, r.entities, r.published_at
  FROM policies p JOIN policy_revisions r ON r.workspace_id = p.workspace_id AND r.id = p.current_revision_id
  WHERE p.workspace_id = $1`;

/** What a draft write sets: the text, its hash and when (a value, or the database clock). */
export interface DraftValues {
  cedarText: string;
  draftHash: string;
  draftUpdatedAt: Date | (() => string);
}

/** `policies` (one draft per workspace) and `policy_revisions` (immutable published revisions). */
@Injectable()
export class PoliciesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * The stored draft with its current revision's publication and whether its text was ever published (in `manager`, or
   * outside a transaction when undefined); undefined before a draft is stored.
   */
  // hand-written: one statement for the draft, a LEFT JOIN to its current revision and an EXISTS over the revisions (read on every policy route)
  async state(manager: EntityManager | undefined, workspaceId: string): Promise<PolicyStateRow | undefined> {
    const [row]: (PolicyStateRow | undefined)[] = await (manager ?? this.dataSource.manager).query(STATE, [workspaceId]);
    return row;
  }

  /** The published revision of the workspace (in `manager`, or outside a transaction when undefined); undefined before the first publish. */
  // hand-written: the draft row joined to its current revision in one statement (snapshot part, overview block)
  async currentRevision(manager: EntityManager | undefined, workspaceId: string): Promise<RevisionRow | undefined> {
    const [row]: RevisionRow[] = await (manager ?? this.dataSource.manager).query(CURRENT_REVISION, [workspaceId]);
    return row;
  }

  /** A revision of this workspace by id (its source and draft hash); null when there is none. */
  revision(workspaceId: string, id: string): Promise<Pick<PolicyRevision, 'id' | 'cedarText' | 'draftHash'> | null> {
    return this.dataSource.manager.findOne(PolicyRevision, { select: { id: true, cedarText: true, draftHash: true }, where: { workspaceId, id } });
  }

  /** The draft row locked `FOR UPDATE` (its id, hash and current revision); null before a draft is stored. */
  lock(manager: EntityManager, workspaceId: string): Promise<Pick<Policy, 'id' | 'draftHash' | 'currentRevisionId'> | null> {
    return manager.findOne(Policy, {
      select: { id: true, draftHash: true, currentRevisionId: true },
      where: { workspaceId },
      lock: { mode: 'pessimistic_write' },
    });
  }

  async insert(manager: EntityManager, workspaceId: string, id: string, draft: DraftValues): Promise<void> {
    await manager.insert(Policy, { workspaceId, id, ...draft });
  }

  async updateDraft(manager: EntityManager, workspaceId: string, draft: DraftValues): Promise<void> {
    await manager.update(Policy, { workspaceId }, draft);
  }

  async setCurrentRevision(manager: EntityManager, workspaceId: string, revisionId: string): Promise<void> {
    await manager.update(Policy, { workspaceId }, { currentRevisionId: revisionId });
  }

  /** Inserts a revision; returns its `published_at` (a database default, read back in `manager`). */
  async insertRevision(manager: EntityManager, revision: Omit<PolicyRevision, 'publishedAt' | 'entities'> & { entities: object[] }): Promise<Date> {
    const revisions = manager.getRepository(PolicyRevision);
    await revisions.insert(revision);
    const { publishedAt } = await revisions.findOneOrFail({ select: { publishedAt: true }, where: { workspaceId: revision.workspaceId, id: revision.id } });
    return publishedAt;
  }
}
