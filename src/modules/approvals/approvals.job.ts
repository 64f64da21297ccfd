import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { singleFlight } from 'src/common/async/single-flight';
import { errorFields } from 'src/common/logging/error-fields';
import { ApprovalEvents } from 'src/modules/approvals/approval-events.service';

export const APPROVAL_TIMEOUTS_INTERVAL_MS = 5_000;

/** `approval.expiring` and expiry's `approval.resolved`, from time (exactly once, whatever the replicas). */
@Injectable()
export class ApprovalsJob {
  private readonly logger = new Logger('approvals');
  private readonly pass = singleFlight(
    () => this.events.notifyTimeouts(),
    (error) => this.logger.warn({ msg: 'approval timeout notification pass failed', ...errorFields(error) }),
  );

  constructor(private readonly events: ApprovalEvents) {}

  @Interval(APPROVAL_TIMEOUTS_INTERVAL_MS)
  tick(): Promise<void> {
    return this.pass();
  }
}
