import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { WebhookEvidenceService } from 'src/modules/webhooks/webhook-evidence.service';
import { errorFields } from 'src/common/logging/error-fields';
import { singleFlight } from 'src/common/async/single-flight';

export const WEBHOOK_JOB_INTERVAL_MS = 30_000;

/**
 * Evidence upkeep: expires unmatched evidence past its retention, correlates again the evidence
 * still waiting for its receipt, and retries failed evaluation hand-offs. Safe on any number of
 * replicas: updates are conditional and evaluation retries are claimed with SKIP LOCKED.
 */
@Injectable()
export class WebhooksJob {
  private readonly logger = new Logger('webhooks');
  private readonly pass = singleFlight(
    () => this.step(),
    (error) => this.logger.warn({ msg: 'webhook evidence pass failed', ...errorFields(error) }),
  );

  constructor(private readonly evidence: WebhookEvidenceService) {}

  @Interval(WEBHOOK_JOB_INTERVAL_MS)
  tick(): Promise<void> {
    return this.pass();
  }

  private async step(): Promise<void> {
    await this.evidence.expire();
    await this.evidence.recorrelate();
    await this.evidence.retryEvaluations();
  }
}
