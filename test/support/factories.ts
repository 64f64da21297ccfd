/**
 * States the suites need that no request produces in the time a test has (a key aged past its
 * expiry, receipts seeded in bulk, a workspace frozen by an operator): one named function each, so
 * that no suite writes to a table itself. A factory goes through the owning module's repository,
 * taken from the running application, whenever the repository can produce the state; a hand-written
 * statement remains only for a state that only a test wants (a row aged or corrupted on purpose).
 * Sections follow the modules, in the order they were added.
 */

// keys
import type { TestApp } from 'test/support/app';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

/** Freezes a workspace as an operator would (the CLI's flag), through the workspaces service. */
export async function freezeWorkspace(t: TestApp, workspaceId: string): Promise<void> {
  await t.app.get(WorkspacesService).setFlag(workspaceId, 'frozen', true);
}

/** Ages every key of the workspace by `days` (created that much earlier): no request backdates a key. */
export async function ageKeys(t: TestApp, workspaceId: string, days: number): Promise<void> {
  await t.db.query(`UPDATE virtual_keys SET created_at = created_at - make_interval(days => $2) WHERE workspace_id = $1`, [workspaceId, days]);
}

/** Moves a key's expiry to a second ago on the database clock (a key minted to expire would take the test's time to lapse). */
export async function expireKey(t: TestApp, keyId: string): Promise<void> {
  await t.db.query(`UPDATE virtual_keys SET expires_at = clock_timestamp() - interval '1 second' WHERE id = $1`, [keyId]);
}

/** Dates a key's last use `days` ago: usage events older than the projection accepts cannot produce it. */
export async function ageKeyUse(t: TestApp, keyId: string, days: number): Promise<void> {
  await t.db.query(`UPDATE virtual_key_usage SET last_used_at = clock_timestamp() - make_interval(days => $2) WHERE key_id = $1`, [keyId, days]);
}

// approvals

/** Moves an approval's expiry to `seconds` from now on the database clock (negative: already past); an approval's TTL is the server's config. */
export async function setApprovalExpiry(t: TestApp, approvalId: string, seconds: number): Promise<void> {
  await t.db.query(`UPDATE approvals SET expires_at = clock_timestamp() + make_interval(secs => $2) WHERE id = $1`, [approvalId, seconds]);
}

/** Expires an approval a second ago. */
export function expireApproval(t: TestApp, approvalId: string): Promise<void> {
  return setApprovalExpiry(t, approvalId, -1);
}

/** Puts a decided approval back to `pending` (a state no vote produces: a decision is final), so a test can watch it time out. */
export async function reopenApproval(t: TestApp, approvalId: string): Promise<void> {
  await t.db.query(`UPDATE approvals SET status = 'pending' WHERE id = $1`, [approvalId]);
}

// notifications
import { NotificationEndpointsRepository } from 'src/modules/notifications/notification-endpoints.repository';

/** Dates the start of an endpoint's failing streak `hours` ago (a streak that long would take the test hours), through the endpoints repository. */
export async function endpointFailingSince(t: TestApp, workspaceId: string, endpointId: string, hours: number): Promise<void> {
  await t.app.get(NotificationEndpointsRepository).update(t.db.manager, workspaceId, endpointId, { failingSince: new Date(Date.now() - hours * 3_600_000) });
}

/** Points an endpoint at `url` without the create/PATCH address check (as if the name had resolved elsewhere when it was checked). */
export async function endpointUrlUnchecked(t: TestApp, workspaceId: string, endpointId: string, url: string): Promise<void> {
  await t.app.get(NotificationEndpointsRepository).update(t.db.manager, workspaceId, endpointId, { url });
}

/** Deletes an endpoint underneath whatever is running (the route would too, but the test wants no request of its own). */
export async function deleteEndpoint(t: TestApp, workspaceId: string, endpointId: string): Promise<void> {
  await t.app.get(NotificationEndpointsRepository).delete(t.db.manager, workspaceId, endpointId);
}

/** A stored `notification.test` message with a pending delivery to the endpoint, due now: the rows a delivery batch works on, made without running one. */
export async function seedPendingDelivery(t: TestApp, workspaceId: string, endpointId: string, messageId: string): Promise<void> {
  await t.db.query(`INSERT INTO notification_messages (id, workspace_id, type, body, created_at) VALUES ($1, $2, 'notification.test', '{}', now())`, [
    messageId,
    workspaceId,
  ]);
  await t.db.query(`INSERT INTO notification_deliveries (endpoint_id, message_id, workspace_id, state, next_attempt_at) VALUES ($1, $2, $3, 'pending', now())`, [
    endpointId,
    messageId,
    workspaceId,
  ]);
}

/** Forgets a message's dedupe key (the message is deleted), so that the same event can be emitted again. */
export async function forgetNotification(t: TestApp, workspaceId: string, dedupeKey: string): Promise<void> {
  await t.db.query(`DELETE FROM notification_messages WHERE workspace_id = $1 AND dedupe_key = $2`, [workspaceId, dedupeKey]);
}

// internal

/** Removes a workspace underneath its rows, foreign keys off for this one transaction: no route deletes a workspace, the spec still answers for it. */
export async function deleteWorkspaceUnderneath(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.transaction(async (m) => {
    await m.query(`SET LOCAL session_replication_role = replica`);
    await m.query(`DELETE FROM workspaces WHERE id = $1`, [workspaceId]);
  });
}

/** Corrupts the workspace's route qualifiers: a second active constraint (`only_targets` beside a pin), which no request can store; null repairs it. */
export async function corruptRouteQualifiers(t: TestApp, workspaceId: string, onlyTargets: string[] | null): Promise<void> {
  await t.db.query(`UPDATE route_qualifiers SET only_targets = $2 WHERE workspace_id = $1`, [workspaceId, onlyTargets && JSON.stringify(onlyTargets)]);
}

/** Stages a new snapshot version without a change that causes one (and without publishing it): what a staging transaction leaves behind. */
export async function stageSnapshotVersion(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`UPDATE workspaces SET snapshot_version = snapshot_version + 1 WHERE id = $1`, [workspaceId]);
}
