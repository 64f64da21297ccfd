import { Inject, Injectable } from '@nestjs/common';
import { formatTimeRequired } from 'src/common/time/time';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { Tx } from 'src/database/transaction';
import { Transactions } from 'src/database/transactions';
import { ApprovalsRepository } from 'src/modules/approvals/approvals.repository';
import { OutboxService } from 'src/modules/notifications/outbox.service';

/** How far back the expiry pass looks for pending approvals past their expiry. */
const RESOLVED_LOOKBACK_MS = 86_400_000;

/** The approval notifications that time and policy changes cause (`approval.expiring`, `approval.resolved`). */
@Injectable()
export class ApprovalEvents {
  constructor(
    private readonly approvals: ApprovalsRepository,
    private readonly transactions: Transactions,
    private readonly outbox: OutboxService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Events from time: `approval.expiring` for pending approvals within NOTIFY_APPROVAL_EXPIRING_S
   * of `expires_at`, and `approval.resolved` (`expired`) for pending ones past it (looked for up to
   * a day back). Each once per approval through the outbox's dedupe key, however many replicas run
   * this pass. Answers how many messages were emitted.
   */
  async notifyTimeouts(now = new Date()): Promise<number> {
    const lead = new Date(now.getTime() + this.config.notify.approvalExpiringSeconds * 1000);
    const rows = await this.approvals.timingOut(lead, new Date(now.getTime() - RESOLVED_LOOKBACK_MS));
    let emitted = 0;
    for (const row of rows) {
      const id = await this.transactions.run((tx) =>
        row.expiresAt <= now
          ? this.emitResolved(tx, row.workspaceId, row, 'expired', row.expiresAt)
          : this.outbox.emit(
              tx,
              row.workspaceId,
              'approval.expiring',
              { approval_id: row.id, expires_at: formatTimeRequired(row.expiresAt), url: this.approvalUrl(row.workspaceId, row.id) },
              { dedupe: { key: `approval.expiring:${row.id}`, until: row.expiresAt } },
            ),
      );
      if (id) emitted++;
    }
    return emitted;
  }

  /**
   * `approval.resolved` (`invalidated`) for every unexpired pending approval raised under another
   * policy set than `currentHash`: called in the transaction of the approval-policy change that
   * invalidates them (under its workspace lock, as votes are), so a rolled-back change emits nothing.
   */
  async emitInvalidated(tx: Tx, workspaceId: string, currentHash: string): Promise<void> {
    const now = new Date();
    for (const approval of await this.approvals.pendingUnderOtherSet(tx.manager, workspaceId, now, currentHash)) {
      await this.emitResolved(tx, workspaceId, approval, 'invalidated', now);
    }
  }

  /**
   * `approval.resolved`, once per approval whichever act or pass sees it leave `pending` first: its
   * dedupe key stays written until the expiry pass stops looking for the approval (a day after it expires).
   */
  emitResolved(tx: Tx, workspaceId: string, approval: { id: string; expiresAt: Date }, status: string, at: Date): Promise<string | null> {
    return this.outbox.emit(
      tx,
      workspaceId,
      'approval.resolved',
      { approval_id: approval.id, decision_status: status, resolved_at: formatTimeRequired(at) },
      { dedupe: { key: `approval.resolved:${approval.id}`, until: new Date(approval.expiresAt.getTime() + RESOLVED_LOOKBACK_MS) } },
    );
  }

  approvalUrl(workspaceId: string, approvalId: string): string {
    return `${this.config.webUrl}/workspaces/${workspaceId}/approvals/${approvalId}`;
  }
}
