import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Env } from 'src/platform/access/context';
import { formatTimeRequired } from 'src/common/time/time';
import { inTransaction, Tx } from 'src/database/transaction';
import { HotPath } from 'src/modules/publication/hot-path';
import { SnapshotRegistry } from 'src/modules/publication/snapshot.registry';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { ApiError } from 'src/common/http/errors';
import { settleAll } from 'src/database/settle-all';
import { errorFields } from 'src/common/logging/error-fields';
import { canonicalJson, sha256Tagged } from 'src/common/crypto/crypto';
import { ControlSigning } from 'src/platform/signing/control-signing.service';
import { snapshotDigest } from 'src/modules/publication/snapshot-integrity';

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

/**
 * A signed snapshot as served and stored: its JSON text, version and digest. The text is always
 * the canonical JSON of the whole document (integrity included), so a version has one byte form
 * whether it comes from the hot path or is rebuilt from PostgreSQL: one strong ETag, one body.
 */
export interface SignedSnapshot {
  json: string;
  version: number;
  digest: string;
}

/** Retention of the version history: the newest `RETAIN_VERSIONS` of a workspace, and every version younger than `RETAIN_DAYS`. */
export const RETAIN_VERSIONS = 100;
export const RETAIN_DAYS = 30;

interface StoredVersionRow {
  version: number;
  env: Env;
  generated_at: Date;
  digest: string;
  kid: string;
  signature: string;
  body: string;
}

interface WorkspaceVersionRow {
  id: string;
  env: Env;
  snapshot_version: number;
  published_version: number;
}

/**
 * Snapshot staging and publication. A change stages a snapshot by incrementing
 * `snapshot_version` in its own transaction; after commit the snapshot is built from committed
 * state, written to the hot path and announced. A failure leaves the workspace pending; the
 * reconciliation job publishes it later. Nothing here can fail an operator write.
 */
@Injectable()
export class PublicationService {
  private readonly logger = new Logger('publication');

  constructor(
    private readonly dataSource: DataSource,
    private readonly registry: SnapshotRegistry,
    private readonly hotPath: HotPath,
    private readonly signing: ControlSigning,
    metrics: MetricsService,
  ) {
    metrics.gauge('control_publications_pending', 'Workspaces whose staged snapshot the hot path does not hold yet', async () => {
      const [row]: { pending: number }[] = await dataSource.query(`SELECT count(*)::int AS pending FROM workspaces WHERE published_version < snapshot_version`);
      return row.pending;
    });
  }

  /**
   * The workspace's publication counters, read in `manager` (a caller's transaction, or the pool):
   * every module reads them here; 500 `workspace publication state is unavailable` when missing.
   */
  async versions(workspaceId: string, manager: EntityManager = this.dataSource.manager): Promise<PublicationVersions> {
    const [row]: PublicationVersions[] = await manager.query(`SELECT snapshot_version, published_version FROM workspaces WHERE id = $1`, [workspaceId]);
    return requirePublicationState(row);
  }

  /**
   * Stages the next snapshot in `tx` and publishes it after commit; returns the staged version.
   * `cause` is the audit action of the change (`policy.publish`, `key.revoke`), kept in the history.
   */
  async stage(tx: Tx, workspaceId: string, cause: string): Promise<number> {
    const [[row]] = await tx.manager.query(`UPDATE workspaces SET snapshot_version = snapshot_version + 1 WHERE id = $1 RETURNING snapshot_version`, [workspaceId]);
    await this.recordCause(tx, workspaceId, row.snapshot_version as number, cause);
    tx.afterCommit(() => this.publish(workspaceId));
    return row.snapshot_version as number;
  }

  /** The version-1 intent of a workspace inserted in `tx` (`workspace.create`), published after commit. */
  async stageFirst(tx: Tx, workspaceId: string): Promise<void> {
    await this.recordCause(tx, workspaceId, 1, 'workspace.create');
    tx.afterCommit(() => this.publish(workspaceId));
  }

  private async recordCause(tx: Tx, workspaceId: string, version: number, cause: string): Promise<void> {
    await tx.manager.query(`INSERT INTO snapshot_versions (workspace_id, version, cause) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [workspaceId, version, cause]);
  }

  /** The snapshot of the committed state, built in one consistent read. Null for a missing workspace. */
  async build(workspaceId: string): Promise<Record<string, unknown> | null> {
    return this.dataSource.transaction('REPEATABLE READ', async (manager) => {
      const rows: WorkspaceVersionRow[] = await manager.query(`SELECT id, env, snapshot_version, published_version FROM workspaces WHERE id = $1`, [workspaceId]);
      const ws = rows[0];
      if (!ws) return null;
      const parts = await this.registry.build(manager, { id: ws.id, env: ws.env, version: ws.snapshot_version });
      return {
        schema_version: 1,
        workspace_id: ws.id,
        env: ws.env,
        version: ws.snapshot_version,
        generated_at: formatTimeRequired(new Date()),
        ...parts,
      };
    });
  }

  /**
   * The signed document of the workspace's current version (`version` when the caller has just
   * read it): the kept one when that version has one, else built from committed state and kept in
   * the history (the first document of a version is its only one, so every replica and the
   * snapshot route serve the same digest; a publication retried while Redis is down neither
   * rebuilds nor re-signs). Null for a missing workspace.
   */
  async document(workspaceId: string, version?: number): Promise<SignedSnapshot | null> {
    const current = version ?? (await this.snapshotVersion(workspaceId));
    if (current === null) return null;
    const kept = await this.stored(workspaceId, current);
    if (kept) return kept;
    const snapshot = await this.build(workspaceId);
    if (!snapshot) return null;
    const built = snapshot.version as number;
    const { schema_version: _s, workspace_id: _w, env, version: _v, generated_at: generatedAt, ...sections } = snapshot;
    const body = canonicalJson(sections);
    const contentHash = sha256Tagged(body);
    const digest = snapshotDigest(snapshot);
    const integrity = { digest, ...this.signing.signDetached(digest) };
    const json = canonicalJson({ ...snapshot, integrity });
    const recorded = await this.dataSource.transaction(async (manager) => {
      await manager.query(`INSERT INTO snapshot_contents (workspace_id, content_hash, body) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [workspaceId, contentHash, body]);
      const rows: unknown[] = await manager.query(
        `INSERT INTO snapshot_versions (workspace_id, version, env, generated_at, content_hash, digest, kid, signature, size) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (workspace_id, version) DO UPDATE SET env = EXCLUDED.env, generated_at = EXCLUDED.generated_at, content_hash = EXCLUDED.content_hash,
           digest = EXCLUDED.digest, kid = EXCLUDED.kid, signature = EXCLUDED.signature, size = EXCLUDED.size
         WHERE snapshot_versions.digest IS NULL RETURNING version`,
        [workspaceId, built, env, generatedAt, contentHash, digest, integrity.kid, integrity.signature, Buffer.byteLength(json)],
      );
      return rows.length > 0;
    });
    if (recorded) return { json, version: built, digest };
    return this.stored(workspaceId, built);
  }

  private async snapshotVersion(workspaceId: string): Promise<number | null> {
    const [ws]: { snapshot_version: number }[] = await this.dataSource.query(`SELECT snapshot_version FROM workspaces WHERE id = $1`, [workspaceId]);
    return ws ? ws.snapshot_version : null;
  }

  /** The document kept for `version`, rebuilt from its header and its stored sections; null when none is kept. */
  async stored(workspaceId: string, version: number): Promise<SignedSnapshot | null> {
    const [row]: StoredVersionRow[] = await this.dataSource.query(
      `SELECT v.version, v.env, v.generated_at, v.digest, v.kid, v.signature, c.body
       FROM snapshot_versions v JOIN snapshot_contents c ON c.workspace_id = v.workspace_id AND c.content_hash = v.content_hash
       WHERE v.workspace_id = $1 AND v.version = $2`,
      [workspaceId, version],
    );
    if (!row) return null;
    const snapshot = {
      schema_version: 1,
      workspace_id: workspaceId,
      env: row.env,
      version: row.version,
      generated_at: formatTimeRequired(row.generated_at),
      ...(JSON.parse(row.body) as Record<string, unknown>),
      integrity: { digest: row.digest, kid: row.kid, signature: row.signature },
    };
    return { json: canonicalJson(snapshot), version: row.version, digest: row.digest };
  }

  /**
   * The digest of the workspace's current version when its document is already kept (null when
   * not yet built); undefined for a missing workspace. One indexed read: what a 304 costs.
   */
  async currentDigest(workspaceId: string): Promise<string | null | undefined> {
    const [row]: { digest: string | null }[] = await this.dataSource.query(
      `SELECT v.digest FROM workspaces w LEFT JOIN snapshot_versions v ON v.workspace_id = w.id AND v.version = w.snapshot_version WHERE w.id = $1`,
      [workspaceId],
    );
    return row ? row.digest : undefined;
  }

  /**
   * What the snapshot route serves: the hot path's document when it holds the current version (no
   * build), else the kept document of that version, else a new one. Null for a missing workspace.
   */
  async current(workspaceId: string): Promise<SignedSnapshot | null> {
    const version = await this.snapshotVersion(workspaceId);
    if (version === null) return null;
    const held = await this.hotPath.get(this.hotPath.snapshotName(workspaceId)).catch(() => null);
    if (held !== null) {
      try {
        const parsed = JSON.parse(held) as { version?: unknown; integrity?: { digest?: unknown } };
        if (parsed.version === version && typeof parsed.integrity?.digest === 'string') return { json: held, version, digest: parsed.integrity.digest };
      } catch {
        // Not JSON: serve from PostgreSQL.
      }
    }
    return this.document(workspaceId, version);
  }

  /** Publishes the workspace's current snapshot; true when the hot path now holds it. */
  async publish(workspaceId: string): Promise<boolean> {
    try {
      const snapshot = await this.document(workspaceId);
      if (!snapshot) return false;
      await this.hotPath.writeSnapshot(workspaceId, snapshot.version, snapshot.json, snapshot.digest);
      await this.dataSource.query(`UPDATE workspaces SET published_version = GREATEST(published_version, $2) WHERE id = $1`, [workspaceId, snapshot.version]);
      await this.dataSource.query(`UPDATE snapshot_versions SET published_at = now() WHERE workspace_id = $1 AND version = $2 AND published_at IS NULL`, [workspaceId, snapshot.version]);
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
    // hand-written: the current version's signing kid of each workspace, keyset-paged (workspaces is read here for its counters, as everywhere in this service)
    const stale = `SELECT w.id FROM workspaces w JOIN snapshot_versions v ON v.workspace_id = w.id AND v.version = w.snapshot_version
                   WHERE w.id > $1 AND v.kid IS NOT NULL AND NOT (v.kid = ANY($3::text[]))`;
    let staged = 0;
    let after = '';
    for (;;) {
      const rows: { id: string }[] = await this.dataSource.query(`${stale} ORDER BY w.id LIMIT $2`, [after, pageSize, fresh]);
      for (const { id } of rows) {
        const restaged = await inTransaction(this.dataSource, async (tx) => {
          const locked: unknown[] = await tx.manager.query(`${stale} AND w.id = $2 FOR UPDATE OF w`, ['', id, fresh]);
          if (locked.length === 0) return false;
          await this.stage(tx, id, 'signing.rotate');
          return true;
        });
        if (restaged) staged++;
      }
      if (rows.length < pageSize) return staged;
      after = rows[rows.length - 1].id;
    }
  }

  /**
   * One retention step (docs/rollout.md): deletes up to `limit` history rows that are neither among
   * their workspace's newest RETAIN_VERSIONS nor younger than RETAIN_DAYS, never the published
   * version, then the sections no kept version uses. Returns how many version rows went.
   */
  async prune(limit = 500): Promise<number> {
    const [row]: { deleted: number }[] = await this.dataSource.query(
      `WITH doomed AS (
         SELECT v.workspace_id, v.version FROM snapshot_versions v JOIN workspaces w ON w.id = v.workspace_id
         WHERE v.staged_at < now() - make_interval(days => $1) AND v.version < w.published_version
           AND v.version <= (SELECT max(x.version) FROM snapshot_versions x WHERE x.workspace_id = v.workspace_id) - $2
         LIMIT $3
       ), gone AS (
         DELETE FROM snapshot_versions v USING doomed d WHERE v.workspace_id = d.workspace_id AND v.version = d.version RETURNING v.workspace_id, v.content_hash
       ), orphans AS (
         DELETE FROM snapshot_contents c USING (SELECT DISTINCT workspace_id, content_hash FROM gone WHERE content_hash IS NOT NULL) g
         WHERE c.workspace_id = g.workspace_id AND c.content_hash = g.content_hash
           AND NOT EXISTS (SELECT 1 FROM snapshot_versions v WHERE v.workspace_id = c.workspace_id AND v.content_hash = c.content_hash
                           AND (v.workspace_id, v.version) NOT IN (SELECT workspace_id, version FROM doomed))
       )
       SELECT count(*)::int AS deleted FROM gone`,
      [RETAIN_DAYS, RETAIN_VERSIONS, limit],
    );
    return row.deleted;
  }

  /**
   * One reconciliation pass over every pending workspace, in pages of `pageSize` (so a workspace
   * that keeps failing never starves the ones after it); returns how many settled.
   */
  reconcile(pageSize = 100): Promise<number> {
    return settleAll(this.dataSource, `SELECT id FROM workspaces WHERE published_version < snapshot_version AND id > $1 ORDER BY id LIMIT $2`, (id) => this.publish(id), pageSize);
  }
}
