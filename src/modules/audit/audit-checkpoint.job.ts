import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { singleFlight } from 'src/common/async/single-flight';
import { errorFields } from 'src/common/logging/error-fields';
import { AuditTrailService } from 'src/modules/audit/audit-trail.service';

/** How often each workspace whose audit chain grew gets a signed checkpoint. */
export const AUDIT_CHECKPOINT_INTERVAL_MS = 60_000;

/**
 * Signs a checkpoint of every grown audit chain. Safe on any number of replicas: a checkpoint is
 * keyed by (workspace, seq) and the first one kept wins.
 */
@Injectable()
export class AuditCheckpointJob {
  private readonly logger = new Logger('audit');
  private readonly pass = singleFlight(
    async () => {
      const signed = await this.trail.checkpoint();
      if (signed?.length) this.logger.log({ msg: 'audit checkpoints signed', workspaces: signed.length });
    },
    (error) => this.logger.warn({ msg: 'audit checkpoint pass failed', ...errorFields(error) }),
  );

  constructor(private readonly trail: AuditTrailService) {}

  @Interval(AUDIT_CHECKPOINT_INTERVAL_MS)
  tick(): Promise<void> {
    return this.pass();
  }
}
