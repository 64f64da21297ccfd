/**
 * States the suites need that no request produces in the time a test has (a key aged past its
 * expiry, receipts seeded in bulk, a workspace frozen by an operator): one named function each, so
 * that no suite writes to a table itself. A factory goes through the owning module's repository,
 * taken from the running application, whenever the repository can produce the state; a hand-written
 * statement remains only for a state that only a test wants (a row aged or corrupted on purpose).
 * Sections follow the modules, in the order they were added.
 */

// tenancy
import { Transactions } from 'src/database/transactions';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';
import type { TestApp } from 'test/support/app';

/** Freezes a workspace as an operator does (`cli workspace:freeze`, WorkspacesService.setFlag). */
export async function freezeWorkspace(t: TestApp, workspaceId: string): Promise<void> {
  if (!(await t.app.get(WorkspacesService).setFlag(workspaceId, 'frozen', true))) throw new Error(`no workspace ${workspaceId}`);
}

// publication

/** Stages a version with no change and no history row (what a publish must catch up with), through the tenancy repository. */
export async function stageBareVersion(t: TestApp, workspaceId: string): Promise<number> {
  return t.app.get(Transactions).run((tx) => t.app.get(WorkspacesRepository).stage(tx.manager, workspaceId));
}

/** Forgets that the hot path holds the workspaces' snapshots (published_version 0): a state only a lost Redis produces. */
export async function markUnpublished(t: TestApp, workspaceIds: string[]): Promise<void> {
  // hand-written: test-only state, no repository lowers the published counter.
  await t.db.query(`UPDATE workspaces SET published_version = 0 WHERE id = ANY($1)`, [workspaceIds]);
}

/** Gives the workspace's route qualifiers a second active constraint (`onlyTargets`), or clears it (null): a row the snapshot cannot deserialize. */
export async function setQualifierOnlyTargets(t: TestApp, workspaceId: string, onlyTargets: string[] | null): Promise<void> {
  // hand-written: a row corrupted on purpose (the API refuses two constraints).
  await t.db.query(`UPDATE route_qualifiers SET only_targets = $2 WHERE workspace_id = $1`, [workspaceId, onlyTargets === null ? null : JSON.stringify(onlyTargets)]);
}

/**
 * Versions 2-130, all published: 2-5 staged now, 6-130 forty days ago; 6-30 with content of their
 * own (`sha256:old`), the rest with `contentHash`; the workspace's counters at 130.
 */
export async function seedAgedSnapshotHistory(t: TestApp, workspaceId: string, contentHash: string): Promise<void> {
  // hand-written: test-only state (history aged 40 days), no API backdates a version.
  await t.db.query(`INSERT INTO snapshot_contents (workspace_id, content_hash, body) VALUES ($1, 'sha256:old', '{}')`, [workspaceId]);
  await t.db.query(
    `INSERT INTO snapshot_versions (workspace_id, version, cause, staged_at, env, generated_at, content_hash, digest, kid, signature, size, published_at)
     SELECT $1, v, 'policy.publish', CASE WHEN v <= 5 THEN now() ELSE now() - interval '40 days' END, 'dev', now(), CASE WHEN v <= 30 AND v > 5 THEN 'sha256:old' ELSE $2 END, 'sha256:x', 'k', 's', 1, now()
     FROM generate_series(2, 130) v`,
    [workspaceId, contentHash],
  );
  await t.db.query(`UPDATE workspaces SET snapshot_version = 130, published_version = 130 WHERE id = $1`, [workspaceId]);
}

/** Backdates the last report of the given gateway instances by `age` (a PostgreSQL interval, e.g. '11 minutes'). */
export async function ageInstanceReports(t: TestApp, workspaceId: string, instanceIds: string[], age: string): Promise<void> {
  // hand-written: a row aged on purpose.
  await t.db.query(`UPDATE snapshot_instances SET reported_at = now() - $3::interval WHERE workspace_id = $1 AND instance_id = ANY($2)`, [workspaceId, instanceIds, age]);
}

// audit (rows corrupted on purpose: what the chain check must catch; no API writes them)

/** Sets the detail of the audit row at `seq` (the chain then says `modified`). */
export async function tamperAuditDetail(t: TestApp, workspaceId: string, seq: number, detail: object): Promise<void> {
  await t.db.query(`UPDATE audit_events SET detail = $3 WHERE workspace_id = $1 AND seq = $2`, [workspaceId, seq, JSON.stringify(detail)]);
}

/** Sets the stored link of the audit row at `seq`. */
export async function setAuditLink(t: TestApp, workspaceId: string, seq: number | string, chainHash: string): Promise<void> {
  await t.db.query(`UPDATE audit_events SET chain_hash = $3 WHERE workspace_id = $1 AND seq = $2`, [workspaceId, seq, chainHash]);
}

/** Deletes the audit row at `seq`. */
export async function deleteAuditRow(t: TestApp, workspaceId: string, seq: number): Promise<void> {
  await t.db.query(`DELETE FROM audit_events WHERE workspace_id = $1 AND seq = $2`, [workspaceId, seq]);
}

/** Swaps the seqs of the audit rows at `a` and `b`. */
export async function swapAuditRows(t: TestApp, workspaceId: string, a: number, b: number): Promise<void> {
  await t.db.query(`UPDATE audit_events SET seq = -1 WHERE workspace_id = $1 AND seq = $2`, [workspaceId, a]);
  await t.db.query(`UPDATE audit_events SET seq = $2 WHERE workspace_id = $1 AND seq = $3`, [workspaceId, a, b]);
  await t.db.query(`UPDATE audit_events SET seq = $2 WHERE workspace_id = $1 AND seq = -1`, [workspaceId, b]);
}

/** Drops the rows after `seq` and moves the chain head back to the row at `seq`: a truncated trail that looks whole. */
export async function truncateAuditChain(t: TestApp, workspaceId: string, seq: number): Promise<void> {
  await t.db.query(`DELETE FROM audit_events WHERE workspace_id = $1 AND seq > $2`, [workspaceId, seq]);
  await t.db.query(
    `UPDATE audit_chain_heads h SET seq = $2, chain_hash = a.chain_hash FROM audit_events a WHERE a.workspace_id = h.workspace_id AND a.seq = $2 AND h.workspace_id = $1`,
    [workspaceId, seq],
  );
}

/** Sets the chain head's link. */
export async function setAuditHead(t: TestApp, workspaceId: string, chainHash: string): Promise<void> {
  await t.db.query(`UPDATE audit_chain_heads SET chain_hash = $2 WHERE workspace_id = $1`, [workspaceId, chainHash]);
}

/** Replaces the checkpoint at `seq` (its link and its signature). */
export async function replaceAuditCheckpoint(t: TestApp, workspaceId: string, seq: number, chainHash: string, jws: string): Promise<void> {
  await t.db.query(`UPDATE audit_checkpoints SET chain_hash = $3, jws = $4 WHERE workspace_id = $1 AND seq = $2`, [workspaceId, seq, chainHash, jws]);
}

/** Deletes every checkpoint of the workspace. */
export async function deleteAuditCheckpoints(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`DELETE FROM audit_checkpoints WHERE workspace_id = $1`, [workspaceId]);
}

/** Deletes the audit rows written (around the service) at `occurredAt`. */
export async function deleteAuditRowsAt(t: TestApp, occurredAt: string): Promise<void> {
  await t.db.query(`DELETE FROM audit_events WHERE occurred_at = $1`, [occurredAt]);
}

// health

/** Removes the newest row of the migrations table (a migration of the code not applied); returns what puts it back. */
export async function unapplyLastMigration(t: TestApp): Promise<() => Promise<void>> {
  const [[last]] = await t.db.query(`DELETE FROM typeorm_migrations WHERE id = (SELECT max(id) FROM typeorm_migrations) RETURNING id, timestamp, name`);
  return async () => {
    await t.db.query(`INSERT INTO typeorm_migrations (id, timestamp, name) VALUES ($1, $2, $3)`, [last.id, last.timestamp, last.name]);
  };
}
