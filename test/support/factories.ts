/**
 * States the suites need that no request produces in the time a test has (a key aged past its
 * expiry, receipts seeded in bulk, a workspace frozen by an operator): one named function each, so
 * that no suite writes to a table itself. A factory goes through the owning module's repository,
 * taken from the running application, whenever the repository can produce the state; a hand-written
 * statement remains only for a state that only a test wants (a row aged or corrupted on purpose).
 * Sections follow the modules, in the order they were added.
 */
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { TestApp } from 'test/support/app';

// usage

/** Freezes (or unfreezes) a workspace as an operator does from the CLI (`WorkspacesService.setFlag`). */
export async function setWorkspaceFrozen(t: TestApp, workspaceId: string, frozen: boolean): Promise<void> {
  if (!(await t.app.get(WorkspacesService).setFlag(workspaceId, 'frozen', frozen))) throw new Error(`workspace ${workspaceId} not found`);
}

/** Breaks the hourly `kind` rollups of a workspace (a negative count no projection writes), so its summary breaks its published schema. */
export async function corruptUsageRollups(t: TestApp, workspaceId: string): Promise<void> {
  await t.db.query(`UPDATE usage_rollups SET event_count = -1 WHERE workspace_id = $1 AND dim = 'kind'`, [workspaceId]);
}

// receipts

/** Dates every receipt head of a workspace at `at` (older than retention, say), as ingestion long ago would have left it. */
export async function ageReceiptHeads(t: TestApp, workspaceId: string, at: Date): Promise<void> {
  await t.db.query(`UPDATE receipt_heads SET occurred_at = $2 WHERE workspace_id = $1`, [workspaceId, at]);
}
