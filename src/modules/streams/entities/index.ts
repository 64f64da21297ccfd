import { ParkedStreamEntry } from 'src/modules/streams/entities/parked-stream-entry.entity';

/** The tables streams owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const STREAMS_ENTITIES = [ParkedStreamEntry];
