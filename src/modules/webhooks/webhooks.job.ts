import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { WebhookEvidenceService } from 'src/modules/webhooks/webhook-evidence.service';
import { errorFields } from 'src/common/logging/error-fields';

export const WEBHOOK_JOB_INTERVAL_MS = 30_000;

/**
 * Evidence upkeep: expires unmatched evidence past its retention, correlates again the evidence
 * still waiting for its receipt, and retries failed evaluation hand-offs. Safe on any number of
 * replicas: updates are conditional and evaluation retries are claimed with SKIP LOCKED.
 */
@Injectable()
export class WebhooksJob {
  private readonly logger = new Logger('webhooks');
  private running = false;

  constructor(private readonly evidence: WebhookEvidenceService) {}

  @Interval(WEBHOOK_JOB_INTERVAL_MS)
  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.evidence.expire();
      await this.evidence.recorrelate();
      await this.evidence.retryEvaluations();
    } catch (error) {
      this.logger.warn({ msg: 'webhook evidence pass failed', ...errorFields(error) });
    } finally {
      this.running = false;
    }
  }
}
