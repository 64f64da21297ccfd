import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { errorFields } from 'src/common/logging/error-fields';
import { ApprovalsService } from 'src/modules/approvals/approvals.service';

export const APPROVAL_TIMEOUTS_INTERVAL_MS = 5_000;

/** `approval.expiring` and expiry's `approval.resolved`, from time (exactly once, whatever the replicas). */
@Injectable()
export class ApprovalsJob {
  private readonly logger = new Logger('approvals');

  constructor(private readonly approvals: ApprovalsService) {}

  @Interval(APPROVAL_TIMEOUTS_INTERVAL_MS)
  async tick(): Promise<void> {
    try {
      await this.approvals.notifyTimeouts();
    } catch (error) {
      this.logger.warn({ msg: 'approval timeout notification pass failed', ...errorFields(error) });
    }
  }
}
