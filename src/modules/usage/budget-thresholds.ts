import { Injectable } from '@nestjs/common';
import { formatTimeRequired } from 'src/common/time/time';
import { Tx } from 'src/database/transaction';
import { OutboxService } from 'src/modules/notifications/outbox.service';
import { monthStart } from 'src/modules/streams/stream-projector';
import { BudgetCrossing, BudgetQuery } from 'src/modules/usage/usage-events.repository';

/** The shares of a key's monthly cap that emit `budget.threshold_crossed` (CONTRACT.md section 7). */
export const BUDGET_THRESHOLDS = [50, 80, 100] as const;

/**
 * `budget.threshold_crossed` for every capped key of a usage batch whose spend in the current UTC
 * month has reached 50, 80 or 100% of its cap, in the projection's transaction: the projection's
 * statement answers the crossings (`current` says which month and thresholds; UsageEventsRepository)
 * and `emit` writes them. Level-triggered (the spend after this batch, whatever batches committed
 * beside it), and exactly once per key, threshold and month through the outbox's dedupe key: two
 * replicas or a redelivered entry emit nothing twice, and a crossing no single batch saw alone is
 * still emitted by the next.
 */
@Injectable()
export class BudgetThresholds {
  constructor(private readonly outbox: OutboxService) {}

  /** What the projection is asked about now: the current UTC month and the thresholds. */
  current(now = new Date()): BudgetQuery {
    const month = monthStart(now);
    return { month, thresholds: BUDGET_THRESHOLDS, dedupeMonth: formatTimeRequired(month) };
  }

  async emit(tx: Tx, budget: BudgetQuery, crossings: BudgetCrossing[]): Promise<void> {
    const to = monthStart(budget.month, 1);
    for (const c of crossings) {
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
          period: { from: budget.dedupeMonth, to: formatTimeRequired(to) },
        },
        { dedupe: { key: c.dedupe_key, until: to } },
      );
    }
  }
}
