import { Injectable } from '@nestjs/common';
import { formatTimeRequired } from 'src/common/time/time';
import { Tx } from 'src/database/transaction';
import { KeyBudgetsRepository } from 'src/modules/keys/key-budgets.repository';
import { NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';
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
    private readonly keyBudgets: KeyBudgetsRepository,
    private readonly rollups: UsageRollupsRepository,
    private readonly messages: NotificationMessagesRepository,
    private readonly outbox: OutboxService,
  ) {}

  async check(tx: Tx, entries: ParsedEntry<UsageEntry>[]): Promise<void> {
    const now = new Date();
    const period = { from: monthStart(now), to: monthStart(now, 1) };
    const keys = new Map<string, [string, string]>();
    for (const { value } of entries) {
      if ('event' in value && value.event.key_id && value.event.pricing_known && value.event.occurred_at >= period.from && value.event.occurred_at < period.to) {
        keys.set(`${value.event.workspace_id}/${value.event.key_id}`, [value.event.workspace_id, value.event.key_id]);
      }
    }
    if (keys.size === 0) return;
    // Three set-based reads per batch, one per owner: the capped keys of the batch (nothing else is
    // read when none is capped), their month's spend from the hourly rollups, and which crossed
    // thresholds already have their message (the emit's dedupe key still decides, so a concurrent
    // batch emits nothing twice).
    const capped = await this.keyBudgets.capped(tx.manager, [...keys.values()]);
    if (capped.length === 0) return;
    const spend = await this.rollups.monthSpend(tx.manager, [...new Set(capped.map((k) => k.workspace_id))], [...new Set(capped.map((k) => k.key_id))], period);
    const spentBy = new Map(spend.map((r) => [`${r.workspace_id}/${r.key_id}`, BigInt(r.spent)]));
    const from = formatTimeRequired(period.from);
    const crossed: { workspaceId: string; keyId: string; agentId: string; cap: bigint; spent: bigint; threshold: number }[] = [];
    for (const k of capped) {
      const cap = BigInt(k.cap);
      const spent = spentBy.get(`${k.workspace_id}/${k.key_id}`) ?? 0n;
      for (const threshold of BUDGET_THRESHOLDS) {
        if (spent * 100n >= cap * BigInt(threshold)) crossed.push({ workspaceId: k.workspace_id, keyId: k.key_id, agentId: k.agent_id, cap, spent, threshold });
      }
    }
    if (crossed.length === 0) return;
    const written = await this.messages.existingDedupeKeys(
      tx.manager,
      crossed.map((c) => c.workspaceId),
      crossed.map((c) => budgetDedupeKey(c.keyId, c.threshold, from)),
    );
    const due = crossed
      .filter((c) => !written.has(`${c.workspaceId} ${budgetDedupeKey(c.keyId, c.threshold, from)}`))
      .sort((a, b) => compare(a.workspaceId, b.workspaceId) || compare(a.keyId, b.keyId) || a.threshold - b.threshold);
    for (const c of due) {
      await this.outbox.emit(
        tx,
        c.workspaceId,
        'budget.threshold_crossed',
        {
          key_id: c.keyId,
          agent_id: c.agentId,
          threshold_percent: c.threshold,
          cap_usd_micros: c.cap,
          spent_usd_micros: c.spent,
          period: { from, to: formatTimeRequired(period.to) },
        },
        { dedupeKey: budgetDedupeKey(c.keyId, c.threshold, from) },
      );
    }
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
