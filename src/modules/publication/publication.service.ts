import { Injectable, Logger } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { ApiError } from 'src/common/http/errors';
import { errorFields } from 'src/common/logging/error-fields';
import { Tx } from 'src/database/transaction';
import { Transactions } from 'src/database/transactions';
import { HotPath } from 'src/modules/publication/hot-path';
import { SignedSnapshot, SnapshotDocuments } from 'src/modules/publication/snapshot-documents.service';
import { SnapshotVersionsRepository } from 'src/modules/publication/snapshot-versions.repository';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { ControlSigning } from 'src/platform/signing/control-signing.service';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';

export type { SignedSnapshot } from 'src/modules/publication/snapshot-documents.service';

export interface Publication {
  state: 'published' | 'pending';
  requested_version: number;
  published_version?: number;
}

/** The `publication` object of documents that report one. */
export function toPublication(requested: number, published: number): Publication {
  const out: Publication = { state: published >= requested ? 'published' : 'pending', requested_version: requested };
  if (published > 0) out.published_version = published;
  return out;
}

/**
 * The publication counters a document's `publication` is built from, read with its other state:
 * a 500 `workspace publication state is unavailable` when they are missing or not yet staged.
 */
export function requirePublicationState<T extends { snapshot_version: number }>(row: T | undefined): T {
  if (!row || !(row.snapshot_version >= 1)) throw new ApiError(500, 'workspace publication state is unavailable');
  return row;
}

/** A workspace's publication counters: the staged snapshot version and the one the hot path holds. */
export interface PublicationVersions {
  snapshot_version: number;
  published_version: number;
}

/** Retention of the version history: the newest `RETAIN_VERSIONS` of a workspace, and every version younger than `RETAIN_DAYS`. */
export const RETAIN_VERSIONS = 100;
export const RETAIN_DAYS = 30;

/**
 * Snapshot staging and publication. A change stages a snapshot by incrementing
 * `snapshot_version` in its own transaction; after commit the snapshot is built from committed
 * state, written to the hot path and announced. A failure leaves the workspace pending; the
 * reconciliation job publishes it later. Nothing here can fail an operator write. The counters
 * are columns of `workspaces` (src/platform/tenancy), written through its repository.
 */
@Injectable()
export class PublicationService {
  private readonly logger = new Logger('publication');

  constructor(
    private readonly transactions: Transactions,
    private readonly workspaces: WorkspacesRepository,
    private readonly history: SnapshotVersionsRepository,
    private readonly documents: SnapshotDocuments,
    private readonly hotPath: HotPath,
    private readonly signing: ControlSigning,
    metrics: MetricsService,
  ) {
    metrics.gauge('control_publications_pending', 'Workspaces whose staged snapshot the hot path does not hold yet', () => workspaces.countPending());
  }

  /**
   * The workspace's publication counters, read in `manager` (a caller's transaction, or the pool):
   * every module reads them here; 500 `workspace publication state is unavailable` when missing.
   */
  async versions(workspaceId: string, manager?: EntityManager): Promise<PublicationVersions> {
    return requirePublicationState(await this.workspaces.versions(workspaceId, manager));
  }

  /**
   * Stages the next snapshot in `tx` and publishes it after commit; returns the staged version.
   * `cause` is the audit action of the change (`policy.publish`, `key.revoke`), kept in the history.
   */
  async stage(tx: Tx, workspaceId: string, cause: string): Promise<number> {
    const version = await this.workspaces.stage(tx.manager, workspaceId);
    await this.history.recordCause(tx.manager, workspaceId, version, cause);
    tx.afterCommit(() => this.publish(workspaceId));
    return version;
  }

  /** The version-1 intent of a workspace inserted in `tx` (`workspace.create`), published after commit. */
  async stageFirst(tx: Tx, workspaceId: string): Promise<void> {
    await this.history.recordCause(tx.manager, workspaceId, 1, 'workspace.create');
    tx.afterCommit(() => this.publish(workspaceId));
  }

  /** The snapshot of the committed state, built in one consistent read. Null for a missing workspace. */
  build(workspaceId: string): Promise<Record<string, unknown> | null> {
    return this.documents.build(workspaceId);
  }

  /** The signed document of the workspace's current version (or `version`), kept in the history once built. Null for a missing workspace. */
  document(workspaceId: string, version?: number): Promise<SignedSnapshot | null> {
    return this.documents.document(workspaceId, version);
  }

  /** The document kept for `version`; null when none is kept. */
  stored(workspaceId: string, version: number): Promise<SignedSnapshot | null> {
    return this.documents.stored(workspaceId, version);
  }

  /**
   * The digest of the workspace's current version when its document is already kept (null when
   * not yet built); undefined for a missing workspace. Two indexed reads by key: what a 304 costs.
   */
  async currentDigest(workspaceId: string): Promise<string | null | undefined> {
    const counters = await this.workspaces.versions(workspaceId);
    if (!counters) return undefined;
    return (await this.history.digest(workspaceId, counters.snapshot_version)) ?? null;
  }

  /**
   * What the snapshot route serves: the hot path's document when it holds the current version (no
   * build), else the kept document of that version, else a new one. Null for a missing workspace.
   */
  async current(workspaceId: string): Promise<SignedSnapshot | null> {
    const version = (await this.workspaces.versions(workspaceId))?.snapshot_version;
    if (version === undefined) return null;
    const held = await this.hotPath.get(this.hotPath.snapshotName(workspaceId)).catch(() => null);
    if (held !== null) {
      try {
        const parsed = JSON.parse(held) as { version?: unknown; integrity?: { digest?: unknown } };
        if (parsed.version === version && typeof parsed.integrity?.digest === 'string') return { json: held, version, digest: parsed.integrity.digest };
      } catch {
        // Not JSON: serve from PostgreSQL.
      }
    }
    return this.documents.document(workspaceId, version);
  }

  /** Publishes the workspace's current snapshot; true when the hot path now holds it. */
  async publish(workspaceId: string): Promise<boolean> {
    try {
      const snapshot = await this.documents.document(workspaceId);
      if (!snapshot) return false;
      await this.hotPath.writeSnapshot(workspaceId, snapshot.version, snapshot.json, snapshot.digest);
      await this.workspaces.markPublished(workspaceId, snapshot.version);
      await this.history.markPublished(workspaceId, snapshot.version);
      return true;
    } catch (error) {
      this.logger.warn({ msg: 'snapshot publication deferred', workspace_id: workspaceId, ...errorFields(error) });
      return false;
    }
  }

  /**
   * After a signing-key rotation: stages a new version of every workspace whose current document
   * is signed by a key that is neither the current nor the next one (cause `signing.rotate`), so
   * the document a gateway fetches is signed by a live key before the old one is retired
   * (docs/runbook.md). Replicas may run it together: each workspace is re-checked under its row
   * lock, where the first one's new version (not built yet, so unsigned) stops the others.
   * Returns how many workspaces were staged.
   */
  async resignStale(pageSize = 100): Promise<number> {
    const fresh = this.signing.freshKids();
    let staged = 0;
    let after = '';
    for (;;) {
      const page = await this.workspaces.versionsAfter(after, pageSize);
      const stale = await this.history.staleSigned(page.map((w) => ({ id: w.id, version: w.snapshot_version })), fresh);
      for (const id of stale) {
        const restaged = await this.transactions.run(async (tx) => {
          const version = await this.workspaces.lockVersion(tx.manager, id);
          if (version === undefined) return false;
          if ((await this.history.staleSigned([{ id, version }], fresh, tx.manager)).length === 0) return false;
          await this.stage(tx, id, 'signing.rotate');
          return true;
        });
        if (restaged) staged++;
      }
      if (page.length < pageSize) return staged;
      after = page[page.length - 1].id;
    }
  }

  /**
   * One retention step (docs/rollout.md): deletes up to `limit` history rows that are neither among
   * their workspace's newest RETAIN_VERSIONS nor younger than RETAIN_DAYS, never the published
   * version, then the sections no kept version uses. Returns how many version rows went.
   */
  prune(limit = 500): Promise<number> {
    return this.history.prune(RETAIN_DAYS, RETAIN_VERSIONS, limit);
  }

  /**
   * One reconciliation pass over every pending workspace, in pages of `pageSize` (so a workspace
   * that keeps failing never starves the ones after it); returns how many settled.
   */
  async reconcile(pageSize = 100): Promise<number> {
    let settled = 0;
    let after = '';
    for (;;) {
      const ids = await this.workspaces.pendingAfter(after, pageSize);
      for (const id of ids) if (await this.publish(id)) settled++;
      if (ids.length < pageSize) return settled;
      after = ids[ids.length - 1];
    }
  }
}
