import { SnapshotContent } from 'src/modules/publication/entities/snapshot-content.entity';
import { SnapshotInstance } from 'src/modules/publication/entities/snapshot-instance.entity';
import { SnapshotVersion } from 'src/modules/publication/entities/snapshot-version.entity';

/** The tables publication owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const PUBLICATION_ENTITIES = [SnapshotContent, SnapshotInstance, SnapshotVersion];
