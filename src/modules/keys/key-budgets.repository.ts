import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';

/** A key with a monthly cap, as the usage budget check reads it. */
export interface CappedKey {
  workspace_id: string;
  key_id: string;
  agent_id: string;
  /** `budget_micros_usd_month`, an int64 as a decimal string. */
  cap: string;
}

/** The monthly caps of `virtual_keys`, for the usage module's budget-threshold check on the ingestion path. */
@Injectable()
export class KeyBudgetsRepository {
  /** The keys among the (workspace, key) pairs that have a monthly cap, read in the caller's transaction. */
  async capped(manager: EntityManager, pairs: [workspaceId: string, keyId: string][]): Promise<CappedKey[]> {
    if (pairs.length === 0) return [];
    // hand-written: on the ingestion path, one statement per batch joining the batch's pairs (unnest) to the key rows;
    // bench/notifications.ts figure 3.
    return manager.query(
      `SELECT k.workspace_id, k.id AS key_id, k.agent_id, k.budget_micros_usd_month::text AS cap
       FROM unnest($1::text[], $2::text[]) AS b(workspace_id, key_id)
       JOIN virtual_keys k ON k.workspace_id = b.workspace_id AND k.id = b.key_id AND k.budget_micros_usd_month > 0`,
      [pairs.map(([w]) => w), pairs.map(([, k]) => k)],
    );
  }
}
