/**
 * States the suites need that no request produces in the time a test has (a key aged past its
 * expiry, receipts seeded in bulk, a workspace frozen by an operator): one named function each, so
 * that no suite writes to a table itself. A factory goes through the owning module's repository,
 * taken from the running application, whenever the repository can produce the state; a hand-written
 * statement remains only for a state that only a test wants (a row aged or corrupted on purpose).
 * Sections follow the modules, in the order they were added.
 */

// policy
import type { EntityManager } from 'typeorm';
import type { TestApp } from 'test/support/app';
import { PoliciesRepository } from 'src/modules/policy/policies.repository';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

/** Freezes (or unfreezes) the workspace, as the operations CLI does (`workspace:freeze`). */
export async function freezeWorkspace(t: TestApp, workspaceId: string, frozen = true): Promise<void> {
  if (!(await t.app.get(WorkspacesService).setFlag(workspaceId, 'frozen', frozen))) throw new Error(`no workspace ${workspaceId}`);
}

/** A workspace whose publication state was never staged (both counters 0): a state only a damaged database holds. */
export async function losePublicationState(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`UPDATE workspaces SET snapshot_version = 0, published_version = 0 WHERE id = $1`, [workspaceId]);
}

/** Stores `cedarText` (hashed `draftHash`) as the workspace's draft in `manager`'s transaction (a concurrent writer). */
export async function storePolicyDraftIn(t: TestApp, manager: EntityManager, workspaceId: string, cedarText: string, draftHash: string): Promise<void> {
  await t.app.get(PoliciesRepository).updateDraft(manager, workspaceId, { cedarText, draftHash, draftUpdatedAt: () => 'clock_timestamp()' });
}

/** Creates the workspace's policy row `id` in `manager`'s transaction (a concurrent writer creating the first draft). */
export async function createPolicyIn(t: TestApp, manager: EntityManager, workspaceId: string, id: string, cedarText: string, draftHash: string): Promise<void> {
  await t.app.get(PoliciesRepository).insert(manager, workspaceId, id, { cedarText, draftHash, draftUpdatedAt: () => 'clock_timestamp()' });
}

/** Tries to rewrite a published revision's source in place (the immutability trigger refuses it). */
export async function rewritePolicyRevision(t: TestApp, revisionId: string, cedarText: string): Promise<void> {
  await t.db.query(`UPDATE policy_revisions SET cedar_text = $2 WHERE id = $1`, [revisionId, cedarText]);
}

/** Tries to delete a published revision (the immutability trigger refuses it). */
export async function deletePolicyRevision(t: TestApp, revisionId: string): Promise<void> {
  await t.db.query(`DELETE FROM policy_revisions WHERE id = $1`, [revisionId]);
}

/** A revision whose source was changed behind the immutability trigger: what only a damaged database holds. */
export async function corruptPolicyRevision(t: TestApp, revisionId: string, cedarText: string): Promise<void> {
  await t.db.query(`ALTER TABLE policy_revisions DISABLE TRIGGER policy_revisions_immutable`);
  try {
    await rewritePolicyRevision(t, revisionId, cedarText);
  } finally {
    await t.db.query(`ALTER TABLE policy_revisions ENABLE TRIGGER policy_revisions_immutable`);
  }
}

// routing

/** The workspace's stored qualifiers given a second active constraint (`only_targets` beside their own): a payload no write produces. */
export async function corruptRouteQualifiers(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`UPDATE route_qualifiers SET only_targets = '["b"]' WHERE workspace_id = $1`, [workspaceId]);
}

/** The workspace's stored qualifiers renamed to an id no write accepts. */
export async function renameRouteQualifiersUnsafely(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`UPDATE route_qualifiers SET qualifier_id = 'Bad Id' WHERE workspace_id = $1`, [workspaceId]);
}

/** A newer snapshot version staged and never published (no write of the workspace is made). */
export async function stageUnpublishedVersion(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`UPDATE workspaces SET snapshot_version = snapshot_version + 1 WHERE id = $1`, [workspaceId]);
}

/** A workspace whose requested snapshot version is unreadable (0, never staged). */
export async function loseSnapshotVersion(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`UPDATE workspaces SET snapshot_version = 0 WHERE id = $1`, [workspaceId]);
}

// webhooks

/** Drops a federated connection's broker reference (`auth_profile.broker_connection_id`), which no connection route leaves out. */
export async function dropBrokerReference(t: TestApp, connectionId: string): Promise<void> {
  await t.db.query(`UPDATE connections SET auth_profile = auth_profile - 'broker_connection_id' WHERE id = $1`, [connectionId]);
}

/** Puts back the broker reference `dropBrokerReference` removed. */
export async function restoreBrokerReference(t: TestApp, connectionId: string, brokerConnectionId: string): Promise<void> {
  await t.db.query(`UPDATE connections SET auth_profile = auth_profile || jsonb_build_object('broker_connection_id', $2::text) WHERE id = $1`, [
    connectionId,
    brokerConnectionId,
  ]);
}
