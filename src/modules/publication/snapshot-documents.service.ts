import { Injectable } from '@nestjs/common';
import { canonicalJson, sha256Tagged } from 'src/common/crypto/crypto';
import { formatTimeRequired } from 'src/common/time/time';
import { SnapshotVersionsRepository } from 'src/modules/publication/snapshot-versions.repository';
import { snapshotDigest } from 'src/modules/publication/snapshot-integrity';
import { SnapshotRegistry } from 'src/modules/publication/snapshot.registry';
import { ControlSigning } from 'src/platform/signing/control-signing.service';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';

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

/** Builds a workspace's snapshot from committed state, signs it and keeps it in the version history. */
@Injectable()
export class SnapshotDocuments {
  constructor(
    private readonly workspaces: WorkspacesRepository,
    private readonly versions: SnapshotVersionsRepository,
    private readonly registry: SnapshotRegistry,
    private readonly signing: ControlSigning,
  ) {}

  /** The snapshot of the committed state, built in one consistent read. Null for a missing workspace. */
  async build(workspaceId: string): Promise<Record<string, unknown> | null> {
    return this.versions.consistentRead(async (manager) => {
      const ws = await this.workspaces.header(manager, workspaceId);
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
    const current = version ?? (await this.workspaces.versions(workspaceId))?.snapshot_version;
    if (current === undefined) return null;
    const kept = await this.stored(workspaceId, current);
    if (kept) return kept;
    const snapshot = await this.build(workspaceId);
    if (!snapshot) return null;
    const built = snapshot.version as number;
    const { schema_version: _s, workspace_id: _w, env, version: _v, generated_at: generatedAt, ...sections } = snapshot;
    const body = canonicalJson(sections);
    const digest = snapshotDigest(snapshot);
    const integrity = { digest, ...this.signing.signDetached(digest) };
    const json = canonicalJson({ ...snapshot, integrity });
    const recorded = await this.versions.record({
      workspaceId,
      version: built,
      env,
      generatedAt,
      contentHash: sha256Tagged(body),
      body,
      digest,
      kid: integrity.kid,
      signature: integrity.signature,
      size: Buffer.byteLength(json),
    });
    if (recorded) return { json, version: built, digest };
    return this.stored(workspaceId, built);
  }

  /** The document kept for `version`, rebuilt from its header and its stored sections; null when none is kept. */
  async stored(workspaceId: string, version: number): Promise<SignedSnapshot | null> {
    const row = await this.versions.stored(workspaceId, version);
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
}
