import { VirtualKey } from 'src/modules/keys/entities/virtual-key.entity';
import { VirtualKeyRemoval } from 'src/modules/keys/entities/virtual-key-removal.entity';
import { VirtualKeyUsage } from 'src/modules/keys/entities/virtual-key-usage.entity';

/** The tables keys owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const KEYS_ENTITIES = [VirtualKey, VirtualKeyRemoval, VirtualKeyUsage];
