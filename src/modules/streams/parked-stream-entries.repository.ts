import { Injectable } from '@nestjs/common';
import { EntityManager, LessThan } from 'typeorm';
import { ParkedStreamEntry } from 'src/modules/streams/entities/parked-stream-entry.entity';
import { ParkedEntry, StreamName } from 'src/modules/streams/stream-projector';

/** `stream_parked`: the malformed entries the consumer kept and acknowledged. */
@Injectable()
export class ParkedStreamEntriesRepository {
  /** Keeps the entries of one stream (an entry parked before, by a redelivery, is kept once), in the caller's transaction. */
  async park(manager: EntityManager, stream: StreamName, entries: (ParkedEntry & { data: string | null })[]): Promise<void> {
    // hand-written: one unnest-batched statement (a pass parks up to BATCH_LIMIT entries: a VALUES list of 5 parameters
    // per row would pass PostgreSQL's 65,535-parameter limit) with ON CONFLICT DO NOTHING for redeliveries.
    await manager.query(
      `INSERT INTO stream_parked (stream, entry_id, workspace_id, reason, data)
       SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) ON CONFLICT DO NOTHING`,
      [stream, entries.map((p) => p.id), entries.map((p) => p.workspaceId), entries.map((p) => p.reason), entries.map((p) => p.data)],
    );
  }

  /** Retention: the entries parked before `cutoff`. */
  async deleteParkedBefore(manager: EntityManager, cutoff: Date): Promise<void> {
    await manager.delete(ParkedStreamEntry, { parkedAt: LessThan(cutoff) });
  }
}
