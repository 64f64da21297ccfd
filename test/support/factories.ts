/**
 * States the suites need that no request produces in the time a test has (a key aged past its
 * expiry, receipts seeded in bulk, a workspace frozen by an operator): one named function each, so
 * that no suite writes to a table itself. A factory goes through the owning module's repository,
 * taken from the running application, whenever the repository can produce the state; a hand-written
 * statement remains only for a state that only a test wants (a row aged or corrupted on purpose).
 * Sections follow the modules, in the order they were added.
 */
import { TestApp } from 'test/support/app';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { NotificationEndpointsRepository } from 'src/modules/notifications/notification-endpoints.repository';
import { EntityManager } from 'typeorm';
import { PoliciesRepository } from 'src/modules/policy/policies.repository';
import { Transactions } from 'src/database/transactions';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';

// connections

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

// workers
// The orchestrator reports run states and artifacts, and billing sets plans: neither has a route in
// control, so these states are written here. Workspace flags go through WorkspacesService (the CLI's way).

/** The workspace's Workers plan (a `worker_plans` row; without one the plan is `free`). */
export async function setWorkerPlan(t: TestApp, workspaceId: string, plan: string): Promise<void> {
  await t.db.query(`INSERT INTO worker_plans (workspace_id, plan) VALUES ($1, $2) ON CONFLICT (workspace_id) DO UPDATE SET plan = excluded.plan`, [
    workspaceId,
    plan,
  ]);
}

/** Back to the `free` plan: the workspace's `worker_plans` row removed. */
export async function clearWorkerPlan(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`DELETE FROM worker_plans WHERE workspace_id = $1`, [workspaceId]);
}

export interface SeededRun {
  id: string;
  kind: 'run' | 'demo';
  status: string;
  environment_classes: string[];
  orchestrator_run_id: string | null;
  template_id?: string;
}

/** Run rows as the orchestrator's reports would leave them (counted by the usage and environment reads). */
export async function seedWorkerRuns(t: TestApp, workspaceId: string, userId: string, runs: SeededRun[]): Promise<void> {
  await t.db.query(
    `INSERT INTO worker_runs (id, workspace_id, kind, template_id, status, environment_classes, input, created_by_user_id, orchestrator_run_id)
     SELECT r.id, $1, r.kind, r.template_id, r.status, string_to_array(r.classes, ','), '{}', $2, r.orchestrator_run_id
     FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) AS r(id, kind, template_id, status, classes, orchestrator_run_id)`,
    [
      workspaceId,
      userId,
      runs.map((r) => r.id),
      runs.map((r) => r.kind),
      runs.map((r) => r.template_id ?? null),
      runs.map((r) => r.status),
      runs.map((r) => r.environment_classes.join(',')),
      runs.map((r) => r.orchestrator_run_id),
    ],
  );
}

/** Removes the workspace's run rows whose id starts with `idPrefix` (all of them without one). */
export async function deleteWorkerRuns(t: TestApp, workspaceId: string, idPrefix = ''): Promise<void> {
  await t.db.query(`DELETE FROM worker_runs WHERE workspace_id = $1 AND starts_with(id, $2)`, [workspaceId, idPrefix]);
}

/** The state the orchestrator reported for a run (`running` after it started, say). */
export async function setWorkerRunStatus(t: TestApp, runId: string, status: string): Promise<void> {
  await t.db.query(`UPDATE worker_runs SET status = $2 WHERE id = $1`, [runId, status]);
}

/** Every active run of the workspace ended `cancelled`, freeing the concurrency slots between tests. */
export async function cancelActiveWorkerRuns(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`UPDATE worker_runs SET status = 'cancelled' WHERE workspace_id = $1 AND status IN ('starting', 'queued', 'running', 'paused')`, [
    workspaceId,
  ]);
}

/** Artifacts the orchestrator recorded for a run; `expires_in_seconds` may be negative (already expired). */
export async function seedRunArtifacts(
  t: TestApp,
  workspaceId: string,
  runId: string,
  artifacts: { id: string; name: string; media_type: string; size_bytes: number; digest: string; expires_in_seconds: number }[],
): Promise<void> {
  for (const a of artifacts) {
    await t.db.query(
      `INSERT INTO worker_run_artifacts (id, workspace_id, run_id, name, media_type, size_bytes, digest, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8))`,
      [a.id, workspaceId, runId, a.name, a.media_type, a.size_bytes, a.digest, a.expires_in_seconds],
    );
  }
}

/** A retired Worker: no route retires one yet, the lifecycle value exists for the patch refusal. */
export async function retireWorker(t: TestApp, workerId: string): Promise<void> {
  await t.db.query(`UPDATE workers SET lifecycle = 'retired' WHERE id = $1`, [workerId]);
}

/** Freezes or unfreezes a workspace, or turns its assistant on or off, as the operations CLI does. */
export async function setWorkspaceFlag(t: TestApp, workspaceId: string, flag: 'frozen' | 'assistant_enabled', value: boolean): Promise<void> {
  await t.app.get(WorkspacesService).setFlag(workspaceId, flag, value);
}

// usage

/** Breaks the hourly `kind` rollups of a workspace (a negative count no projection writes), so its summary breaks its published schema. */
export async function corruptUsageRollups(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`UPDATE usage_rollups SET event_count = -1 WHERE workspace_id = $1 AND dim = 'kind'`, [workspaceId]);
}

// receipts

/** Dates every receipt head of a workspace at `at` (older than retention, say), as ingestion long ago would have left it. */
export async function ageReceiptHeads(t: TestApp, workspaceId: string, at: Date): Promise<void> {
  await t.db.query(`UPDATE receipt_heads SET occurred_at = $2 WHERE workspace_id = $1`, [workspaceId, at]);
}

// keys

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

// policy

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

/** The workspace's stored qualifiers renamed to an id no write accepts. */
export async function renameRouteQualifiersUnsafely(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`UPDATE route_qualifiers SET qualifier_id = 'Bad Id' WHERE workspace_id = $1`, [workspaceId]);
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

/** Rewrites the stored target of the audit row at `seq` (what a tampering with the trail leaves). */
export async function tamperAuditTarget(t: TestApp, workspaceId: string, seq: number, target: string): Promise<void> {
  await t.db.query(`UPDATE audit_events SET target = $3 WHERE workspace_id = $1 AND seq = $2`, [workspaceId, seq, target]);
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
