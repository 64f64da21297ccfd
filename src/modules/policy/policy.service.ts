import { OutboxService } from 'src/modules/notifications/outbox.service';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Env, WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { canonicalJson, sha256Tagged } from 'src/common/crypto/crypto';
import { ApiError, conflict } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { formatTime, formatTimeRequired } from 'src/common/time/time';
import { AuditService } from 'src/modules/audit/audit.service';
import { CompileResult } from 'src/modules/policy/diagnostics';
import { DEFAULT_POLICY, defaultPolicyId, draftHash, PolicyDocument, PolicyState, toPolicyDocument } from 'src/modules/policy/dto/policy.document';
import { PoliciesRepository, PolicyStateRow, RevisionRow } from 'src/modules/policy/policies.repository';
import { AuthorizationRequest, Evaluation, PolicyCompiler, PolicyCompilerError } from 'src/modules/policy/policy.compiler';
import { PublicationService, toPublication } from 'src/modules/publication/publication.service';
import { SnapshotRegistry, SnapshotUnavailableError } from 'src/modules/publication/snapshot.registry';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';

/** Thrown by publish when the draft does not compile: answered 422 with the policy document as the body. */
export class PolicyRejectedError extends Error {
  constructor(readonly document: PolicyDocument) {
    super('policy draft did not compile');
  }
}

/** What the state read stands for when no policy is stored yet (the default policy applies). */
const NO_POLICY: PolicyStateRow = {
  policy_id: null,
  cedar_text: null,
  draft_hash: null,
  draft_updated_at: null,
  current_revision_id: null,
  published_at: null,
  bundle_hash: null,
  draft_published: false,
};

/** The entity snapshot a revision freezes at publish time: the workspace entity every principal and resource descends from. */
function entitySnapshot(workspaceId: string, env: Env) {
  return [{ uid: { type: 'Gateway::Workspace', id: workspaceId }, attrs: { env }, parents: [] }];
}

/** `sha256:` over the compiled bundle: the source plus the entity snapshot, as canonical JSON. */
function bundleHash(cedarText: string, entities: unknown): string {
  return sha256Tagged(canonicalJson({ cedar_text: cedarText, entities }));
}

/** A run of the compiler seam, its refusals (busy, unavailable) answered 503 with their reason. */
async function throughSeam<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof PolicyCompilerError) throw new ApiError(503, error.reason);
    throw error;
  }
}

/**
 * The authorization policy: one draft per workspace (the default until one is stored), compiled
 * by the shared seam, published in three phases into immutable revisions.
 */
@Injectable()
export class PolicyService implements OnModuleInit {
  constructor(
    private readonly policies: PoliciesRepository,
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly publications: PublicationService,
    private readonly compiler: PolicyCompiler,
    private readonly snapshots: SnapshotRegistry,
    private readonly overviews: OverviewRegistry,
    private readonly outbox: OutboxService,
  ) {}

  onModuleInit(): void {
    this.snapshots.register('policy', (manager, ws) => this.snapshotPart(manager, ws.id));
    this.overviews.register('policy', async (workspaceId) => {
      const row = await this.policies.currentRevision(undefined, workspaceId);
      if (!row) return { published: false, revision_id: null, published_at: null, bundle_hash: null };
      return { published: true, revision_id: row.id, published_at: formatTime(row.published_at), bundle_hash: row.bundle_hash };
    });
  }

  async get(ws: WorkspaceContext) {
    return toPolicyDocument(await this.readState(undefined, ws));
  }

  async storeDraft(ctx: WorkspaceContext, cedarText: string) {
    return this.access.mutate(ctx, async (tx, ws) => {
      // Under the workspace lock no other writer can store the draft between the find and the insert.
      const draft = { cedarText, draftHash: draftHash(cedarText), draftUpdatedAt: () => 'clock_timestamp()' };
      const current = await this.policies.lock(tx.manager, ws.id);
      const id = current?.id ?? newId('pol');
      if (current) await this.policies.updateDraft(tx.manager, ws.id, draft);
      else await this.policies.insert(tx.manager, ws.id, id, draft);
      await this.audit.record(tx, { workspaceId: ws.id, actor: ws.operator, action: 'policy.draft.store', target: id, detail: { policy_id: id } });
      return toPolicyDocument(await this.readState(tx.manager, ws));
    });
  }

  /** Compiles the stored draft; writes nothing, and an invalid draft is still an answer. */
  async test(ws: WorkspaceContext) {
    const state = await this.readState(undefined, ws);
    return toPolicyDocument(state, await this.compile(state.cedarText));
  }

  /**
   * Three phases: (1) read the draft and revision and close that read; (2) compile with no
   * transaction or lock held; (3) lock the workspace and policy, re-check that nothing moved, and
   * write the revision, the snapshot staging and the audit row together. Any change is a 409 with
   * no writes.
   */
  async publish(ctx: WorkspaceContext, expectedDraftHash: string, expectedRevisionId: string | null) {
    const seen = await this.readState(undefined, ctx);
    if (seen.draftHash !== expectedDraftHash) throw conflict('policy draft changed');
    if (seen.currentRevisionId !== expectedRevisionId) throw conflict('policy revision changed');

    await this.requireCompiled(seen);

    const published = await this.access.mutate(ctx, async (tx, ws) => {
      await this.recheck(tx.manager, ws.id, seen);
      const policyId = seen.stored ? seen.policyId : newId('pol');
      if (!seen.stored) {
        await this.policies.insert(tx.manager, ws.id, policyId, { cedarText: seen.cedarText, draftHash: seen.draftHash, draftUpdatedAt: seen.draftUpdatedAt });
      }
      const revisionId = newId('rev');
      const entities = entitySnapshot(ws.id, ws.env);
      const hash = bundleHash(seen.cedarText, entities);
      const publishedAt = await this.policies.insertRevision(tx.manager, {
        id: revisionId,
        workspaceId: ws.id,
        policyId,
        cedarText: seen.cedarText,
        draftHash: seen.draftHash,
        bundleHash: hash,
        entities,
        publishedBy: ws.operator.userId,
      });
      await this.policies.setCurrentRevision(tx.manager, ws.id, revisionId);
      const version = await this.publications.stage(tx, ws.id, 'policy.publish');
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'policy.publish',
        target: policyId,
        detail: { policy_id: policyId, revision_id: revisionId, bundle_hash: hash, snapshot_version: version },
      });
      await this.outbox.emit(tx, ws.id, 'policy.published', { revision_id: revisionId, user_id: ws.operator.userId });
      return { policyId, revisionId, publishedAt, version };
    });
    // After commit (and the publication attempt that follows it): how far the staged snapshot got.
    const counters = await this.publications.versions(ctx.id);
    return {
      schema_version: 1,
      policy_id: published.policyId,
      revision_id: published.revisionId,
      draft_hash: seen.draftHash,
      published_at: formatTimeRequired(published.publishedAt),
      publication: toPublication(published.version, counters.published_version),
    };
  }

  /** Phase 3: under the workspace lock, the policy row locked, the values phase 1 saw must all still hold. */
  private async recheck(manager: EntityManager, workspaceId: string, seen: PolicyState): Promise<void> {
    const now = await this.policies.lock(manager, workspaceId);
    if (!now && !seen.stored) return;
    if (!now || !seen.stored || now.id !== seen.policyId || now.draftHash !== seen.draftHash) throw conflict('policy draft changed');
    if (now.currentRevisionId !== seen.currentRevisionId) throw conflict('policy revision changed');
  }

  /** Compiles the source of `state`; one that does not compile is a PolicyRejectedError (422 with its document), as publish answers. */
  async requireCompiled(state: PolicyState): Promise<void> {
    const compiled = await this.compile(state.cedarText);
    if (!compiled.valid) throw new PolicyRejectedError(toPolicyDocument(state, compiled));
  }

  /** Evaluates pages of requests against `source` (named `key`) with the workspace entity every request needs (`PolicyCompiler.evaluate`). */
  evaluate(
    ws: WorkspaceContext,
    key: string,
    source: string,
    nextPage: () => Promise<AuthorizationRequest[] | null>,
    take: (results: Evaluation[]) => void,
  ): Promise<void> {
    return throughSeam(() => this.compiler.evaluate(key, source, entitySnapshot(ws.id, ws.env), nextPage, take));
  }

  /** The published revision of the workspace; undefined before the first publish. */
  currentRevision(workspaceId: string): Promise<RevisionRow | undefined> {
    return this.policies.currentRevision(undefined, workspaceId);
  }

  private compile(source: string): Promise<CompileResult> {
    return throughSeam(() => this.compiler.compile(source));
  }

  /** The snapshot's `policy` part: the current revision, recompiled through the seam so only a valid bundle ships. */
  private async snapshotPart(manager: EntityManager, workspaceId: string) {
    const row = await this.policies.currentRevision(manager, workspaceId);
    if (!row) return null;
    let compiled: CompileResult;
    try {
      compiled = await this.compiler.compile(row.cedar_text);
    } catch (error) {
      if (error instanceof PolicyCompilerError) throw new SnapshotUnavailableError(error.reason);
      throw error;
    }
    if (!compiled.valid || bundleHash(row.cedar_text, row.entities) !== row.bundle_hash) {
      throw new SnapshotUnavailableError('policy bundle does not compile');
    }
    return { revision_id: row.id, bundle_hash: row.bundle_hash, cedar_text: row.cedar_text, entities: row.entities };
  }

  /** Draft, current revision and the publication counters, read in `manager` (outside a transaction when none); 500 when the counters cannot be read. */
  async readState(manager: EntityManager | undefined, ws: WorkspaceContext): Promise<PolicyState> {
    const workspaceId = ws.id;
    const versions = await this.publications.versions(workspaceId, manager);
    const found = await this.policies.state(manager, workspaceId);
    const row = found ?? NO_POLICY;
    const stored = row.policy_id !== null;
    return {
      workspaceId,
      stored,
      policyId: row.policy_id ?? defaultPolicyId(workspaceId),
      cedarText: row.cedar_text ?? DEFAULT_POLICY,
      draftHash: row.draft_hash ?? draftHash(DEFAULT_POLICY),
      draftUpdatedAt: row.draft_updated_at ?? ws.createdAt,
      currentRevisionId: row.current_revision_id,
      publishedAt: row.published_at,
      publishedHash: row.bundle_hash,
      draftPublished: row.draft_published,
      snapshotVersion: versions.snapshot_version,
      publishedVersion: versions.published_version,
    };
  }
}
