import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { singleFlight } from 'src/common/async/single-flight';
import { errorFields } from 'src/common/logging/error-fields';
import { StreamsService } from 'src/modules/streams/streams.service';

export const CONSUME_INTERVAL_MS = 250;
export const MAINTENANCE_INTERVAL_MS = 3_600_000;

/** The consumer's two periodic passes: draining the streams, and the read models' maintenance. */
@Injectable()
export class StreamsJob {
  private readonly logger = new Logger('streams');
  private readonly consume = singleFlight(
    () => this.streams.drain(),
    (error) => this.logger.warn({ msg: 'stream pass failed', ...errorFields(error) }),
  );
  private readonly maintenance = singleFlight(
    () => this.streams.maintain(),
    (error) => this.logger.warn({ msg: 'read model maintenance failed', ...errorFields(error) }),
  );

  constructor(private readonly streams: StreamsService) {}

  @Interval(CONSUME_INTERVAL_MS)
  tick(): Promise<void> {
    return this.consume();
  }

  @Interval(MAINTENANCE_INTERVAL_MS)
  maintenanceTick(): Promise<void> {
    return this.maintenance();
  }
}
