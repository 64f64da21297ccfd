/**
 * States the suites need that no request produces in the time a test has (a key aged past its
 * expiry, receipts seeded in bulk, a workspace frozen by an operator): one named function each, so
 * that no suite writes to a table itself. A factory goes through the owning module's repository,
 * taken from the running application, whenever the repository can produce the state; a hand-written
 * statement remains only for a state that only a test wants (a row aged or corrupted on purpose).
 * Sections follow the modules, in the order they were added.
 */

// connections
import type { TestApp } from 'test/support/app';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';

/** Moves the expiry of OAuth states (of one connection, or every state) `ago` into the past, on the database clock (`'25 hours'`). */
export async function expireOAuthStates(t: TestApp, ago: string, connectionId?: string): Promise<void> {
  await t.db.query(`UPDATE oauth_states SET expires_at = clock_timestamp() - $1::interval WHERE $2::text IS NULL OR connection_id = $2`, [
    ago,
    connectionId ?? null,
  ]);
}

/** Expires a catalog session a second ago: a session lives ten minutes, longer than a test waits. */
export async function expireCatalogSession(t: TestApp, sessionId: string): Promise<void> {
  await t.db.query(`UPDATE catalog_sessions SET expires_at = clock_timestamp() - interval '1 second' WHERE id = $1`, [sessionId]);
}

/** Ends a deferred refresh's backoff now (the shortest backoff is a minute). */
export async function endRefreshBackoff(t: TestApp, connectionId: string): Promise<void> {
  await t.db.query(`UPDATE connections SET refresh_not_before = clock_timestamp() - interval '1 second' WHERE id = $1`, [connectionId]);
}

/** Puts a disabled connection back to `pending` with nothing else changed: a state no request produces (a reconnect moves the revision). */
export async function reviveConnection(t: TestApp, connectionId: string): Promise<void> {
  await t.db.query(`UPDATE connections SET status = 'pending' WHERE id = $1`, [connectionId]);
}

/** Stages a snapshot version that never publishes: the publication left behind, as a gateway that stopped acknowledging would leave it. */
export async function leaveSnapshotUnpublished(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`UPDATE workspaces SET snapshot_version = snapshot_version + 1 WHERE id = $1`, [workspaceId]);
}

/** Zeroes the workspace's snapshot version: a publication state only a damaged database holds. */
export async function zeroSnapshotVersion(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`UPDATE workspaces SET snapshot_version = 0 WHERE id = $1`, [workspaceId]);
}

/** An active model-provider connection, written through the connections repository without the gateway's seal. */
export async function activeModelConnection(t: TestApp, workspaceId: string, createdBy: string, provider = 'provider_a'): Promise<string> {
  const repository = t.app.get(ConnectionsRepository);
  const id = await repository.insert(t.db.manager, {
    workspaceId,
    kind: 'model',
    connectorSlug: provider,
    source: 'native',
    custody: 'obol',
    target: 'model_provider',
    authProfile: {},
    authProfileDigest: 'x',
    modelConfig: { model_pattern: `${provider}-*`, upstream_model: 'm', base_url: 'https://models.example/v1' },
    createdBy,
  });
  const sealed = { kind: 'key' as const, envelope: 'sealed', keyId: 'k', last4: 'abcd', scheme: 'bearer', grantCleared: false };
  await repository.activateCredential(t.db.manager, workspaceId, id, sealed);
  return id;
}
