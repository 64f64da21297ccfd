import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull, LessThan, Not } from 'typeorm';
import type { Env } from 'src/platform/access/context';
import { SnapshotContent } from 'src/modules/publication/entities/snapshot-content.entity';
import { SnapshotVersion } from 'src/modules/publication/entities/snapshot-version.entity';

/** A kept document's header with its sections' canonical JSON. */
export interface StoredVersionRow {
  version: number;
  env: Env;
  generated_at: Date;
  digest: string;
  kid: string;
  signature: string;
  body: string;
}

/** A built document as kept: the header in `snapshot_versions`, the sections once per content in `snapshot_contents`. */
export interface BuiltVersion {
  workspaceId: string;
  version: number;
  env: unknown;
  generatedAt: unknown;
  contentHash: string;
  body: string;
  digest: string;
  kid: string;
  signature: string;
  size: number;
}

/** A published version as the history lists it. */
export interface PublishedVersionRow {
  version: number;
  digest: string;
  size: number;
  published_at: Date;
  cause: string | null;
}

// hand-written: a join of the two history tables (header and content) on the composite content key.
const STORED = `SELECT v.version, v.env, v.generated_at, v.digest, v.kid, v.signature, c.body
  FROM snapshot_versions v JOIN snapshot_contents c ON c.workspace_id = v.workspace_id AND c.content_hash = v.content_hash
  WHERE v.workspace_id = $1 AND v.version = $2`;
// hand-written: ON CONFLICT upsert that fills a staged version's header only while it has none (WHERE digest IS NULL), first document wins.
const RECORD_VERSION = `INSERT INTO snapshot_versions (workspace_id, version, env, generated_at, content_hash, digest, kid, signature, size)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
  ON CONFLICT (workspace_id, version) DO UPDATE SET env = EXCLUDED.env, generated_at = EXCLUDED.generated_at, content_hash = EXCLUDED.content_hash,
    digest = EXCLUDED.digest, kid = EXCLUDED.kid, signature = EXCLUDED.signature, size = EXCLUDED.size
  WHERE snapshot_versions.digest IS NULL RETURNING version`;
// hand-written: one bounded retention step in one statement (CTE: pick, delete versions, delete the contents no kept version uses).
// A version goes only when a newer one has been published (so never the published one), it is older than $1 days and
// $2 versions behind its workspace's newest.
const PRUNE = `WITH doomed AS (
    SELECT v.workspace_id, v.version FROM snapshot_versions v
    WHERE v.staged_at < now() - make_interval(days => $1)
      AND EXISTS (SELECT 1 FROM snapshot_versions p WHERE p.workspace_id = v.workspace_id AND p.version > v.version AND p.published_at IS NOT NULL)
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
  SELECT count(*)::int AS deleted FROM gone`;
// hand-written: a page of (workspace id, version) pairs (unnest of parallel arrays) whose document is signed by a kid not in $3.
const STALE_SIGNED = `SELECT v.workspace_id FROM snapshot_versions v
  JOIN unnest($1::text[], $2::int[]) AS w(id, version) ON v.workspace_id = w.id AND v.version = w.version
  WHERE v.kid IS NOT NULL AND NOT (v.kid = ANY($3::text[])) ORDER BY v.workspace_id`;
// hand-written: converges a published version once no live instance (reported within $3 seconds) runs an older one (NOT EXISTS over instances).
const CONVERGE = `UPDATE snapshot_versions v SET converged_at = now() WHERE v.workspace_id = $1 AND v.version = $2 AND v.converged_at IS NULL
    AND NOT EXISTS (SELECT 1 FROM snapshot_instances i
                    WHERE i.workspace_id = $1 AND i.reported_at >= now() - make_interval(secs => $3) AND i.version < v.version)
  RETURNING published_at, converged_at`;

/** `snapshot_versions` and `snapshot_contents`: the kept history of every workspace's snapshot documents (docs/rollout.md). */
@Injectable()
export class SnapshotVersionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Runs `work` in one REPEATABLE READ transaction: the consistent read a snapshot is built in (every contributor reads the same state). */
  consistentRead<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction('REPEATABLE READ', work);
  }

  /** Records the audit action that staged `version` in `manager`'s transaction (kept when the version has a row already). */
  async recordCause(manager: EntityManager, workspaceId: string, version: number, cause: string): Promise<void> {
    await manager.createQueryBuilder().insert().into(SnapshotVersion).values({ workspaceId, version, cause }).orIgnore().execute();
  }

  /** The document kept for `version`; undefined when none is. */
  async stored(workspaceId: string, version: number): Promise<StoredVersionRow | undefined> {
    const [row]: StoredVersionRow[] = await this.dataSource.query(STORED, [workspaceId, version]);
    return row;
  }

  /** Keeps a built document in one transaction; true when this one is the version's document (a racing first one may have won). */
  record(built: BuiltVersion): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      await manager
        .createQueryBuilder()
        .insert()
        .into(SnapshotContent)
        .values({ workspaceId: built.workspaceId, contentHash: built.contentHash, body: built.body })
        .orIgnore()
        .execute();
      const rows: unknown[] = await manager.query(RECORD_VERSION, [
        built.workspaceId,
        built.version,
        built.env,
        built.generatedAt,
        built.contentHash,
        built.digest,
        built.kid,
        built.signature,
        built.size,
      ]);
      return rows.length > 0;
    });
  }

  /** The digest of a version's document, read in `manager`: null while not built, undefined when the version has no row. */
  async digest(workspaceId: string, version: number, manager: EntityManager = this.dataSource.manager): Promise<string | null | undefined> {
    const row = await manager.findOne(SnapshotVersion, { select: { workspaceId: true, version: true, digest: true }, where: { workspaceId, version } });
    return row ? row.digest : undefined;
  }

  /** A version's digest and publication times; undefined when the version has no row. */
  async publication(
    workspaceId: string,
    version: number,
  ): Promise<{ digest: string | null; published_at: Date | null; converged_at: Date | null } | undefined> {
    const row = await this.dataSource.manager.findOne(SnapshotVersion, {
      select: { workspaceId: true, version: true, digest: true, publishedAt: true, convergedAt: true },
      where: { workspaceId, version },
    });
    return row ? { digest: row.digest, published_at: row.publishedAt, converged_at: row.convergedAt } : undefined;
  }

  /** Stamps when the hot path took `version` (the first time only). */
  async markPublished(workspaceId: string, version: number): Promise<void> {
    await this.dataSource.manager.update(SnapshotVersion, { workspaceId, version, publishedAt: IsNull() }, { publishedAt: () => 'now()' });
  }

  /** The workspace ids among `pairs` whose version's document is signed by a kid outside `fresh`, read in `manager`. */
  async staleSigned(pairs: { id: string; version: number }[], fresh: string[], manager: EntityManager = this.dataSource.manager): Promise<string[]> {
    if (pairs.length === 0) return [];
    const rows: { workspace_id: string }[] = await manager.query(STALE_SIGNED, [pairs.map((w) => w.id), pairs.map((w) => w.version), fresh]);
    return rows.map((r) => r.workspace_id);
  }

  /** Published versions newest first, below `before` when given; `limit` rows at most. */
  async publishedPage(workspaceId: string, before: number | null, limit: number): Promise<PublishedVersionRow[]> {
    const rows = await this.dataSource.manager.find(SnapshotVersion, {
      select: { workspaceId: true, version: true, digest: true, size: true, publishedAt: true, cause: true },
      where: { workspaceId, publishedAt: Not(IsNull()), ...(before === null ? {} : { version: LessThan(before) }) },
      order: { version: 'DESC' },
      take: limit,
    });
    return rows.map((r) => ({ version: r.version, digest: r.digest!, size: r.size!, published_at: r.publishedAt!, cause: r.cause }));
  }

  /** Sets `converged_at` of the published `version` when no live instance is behind it, in `manager`; the times when it did. */
  async converge(
    manager: EntityManager,
    workspaceId: string,
    version: number,
    liveSeconds: number,
  ): Promise<{ published_at: Date | null; converged_at: Date } | undefined> {
    const [[row]]: [{ published_at: Date | null; converged_at: Date }[], number] = await manager.query(CONVERGE, [workspaceId, version, liveSeconds]);
    return row;
  }

  /** One retention step: deletes up to `limit` history rows (see PRUNE) and the contents no kept version uses; how many versions went. */
  async prune(retainDays: number, retainVersions: number, limit: number): Promise<number> {
    const [row]: { deleted: number }[] = await this.dataSource.query(PRUNE, [retainDays, retainVersions, limit]);
    return row.deleted;
  }
}
