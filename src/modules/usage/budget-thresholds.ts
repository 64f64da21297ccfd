import { Injectable } from '@nestjs/common';
import { formatTimeRequired } from 'src/common/time/time';
import { Tx } from 'src/database/transaction';
import { OutboxService } from 'src/modules/notifications/outbox.service';
import { monthStart, ParsedEntry } from 'src/modules/streams/stream-projector';
import { UsageRollupsRepository } from 'src/modules/usage/usage-rollups.repository';
import { UsageEntry } from 'src/modules/usage/usage-vocabulary';

/** The shares of a key's monthly cap that emit `budget.threshold_crossed` (CONTRACT.md section 7). */
export const BUDGET_THRESHOLDS = [50, 80, 100] as const;

const budgetDedupeKey = (keyId: string, threshold: number, from: string) => `budget:${keyId}:${threshold}:${from}`;

/**
 * `budget.threshold_crossed` for every capped key of a usage batch whose spend in the current UTC
 * month has reached 50, 80 or 100% of its cap, in the projection's transaction. Level-triggered
 * (the spend after this batch, whatever batches committed beside it), and exactly once per key,
 * threshold and month through the outbox's dedupe key: two replicas or a redelivered entry
 * emit nothing twice, and a crossing no single batch saw alone is still emitted by the next.
 */
@Injectable()
export class BudgetThresholds {
  constructor(
    private readonly rollups: UsageRollupsRepository,
    private readonly outbox: OutboxService,
  ) {}

  async check(tx: Tx, entries: ParsedEntry<UsageEntry>[]): Promise<void> {
    const now = new Date();
    const period = { from: monthStart(now), to: monthStart(now, 1) };
    // Per batch on the ingestion path: instants compared as numbers and keys gathered per workspace (a
    // Date comparison and a concatenated map key per event were a fifth of the check's time; bench/notifications.ts).
    const [start, end] = [period.from.getTime(), period.to.getTime()];
    const keys = new Map<string, Set<string>>();
    for (const { value } of entries) {
      if (!('event' in value)) continue;
      const { workspace_id: workspaceId, key_id: keyId, pricing_known: known, occurred_at: at } = value.event;
      if (!keyId || !known || at.getTime() < start || at.getTime() >= end) continue;
      const ofWorkspace = keys.get(workspaceId);
      if (ofWorkspace) ofWorkspace.add(keyId);
      else keys.set(workspaceId, new Set([keyId]));
    }
    if (keys.size === 0) return;
    const pairs = [...keys].flatMap(([workspaceId, ids]) => [...ids].map((keyId): [string, string] => [workspaceId, keyId]));
    const from = formatTimeRequired(period.from);
    const due = await this.rollups.budgetCrossings(tx.manager, pairs, period.from, BUDGET_THRESHOLDS, from);
    for (const c of due) {
      await this.outbox.emit(
        tx,
        c.workspace_id,
        'budget.threshold_crossed',
        {
          key_id: c.key_id,
          agent_id: c.agent_id,
          threshold_percent: c.threshold,
          cap_usd_micros: BigInt(c.cap),
          spent_usd_micros: BigInt(c.spent),
          period: { from, to: formatTimeRequired(period.to) },
        },
        { dedupe: { key: budgetDedupeKey(c.key_id, c.threshold, from), until: period.to } },
      );
    }
  }
}

