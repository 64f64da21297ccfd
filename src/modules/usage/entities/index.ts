import { UsageEvent } from 'src/modules/usage/entities/usage-event.entity';
import { UsageGap } from 'src/modules/usage/entities/usage-gap.entity';
import { UsageRollup } from 'src/modules/usage/entities/usage-rollup.entity';
import { UsageMinuteRollup } from 'src/modules/usage/entities/usage-minute-rollup.entity';
import { UsageKeyMonth } from 'src/modules/usage/entities/usage-key-month.entity';

/** The tables usage owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const USAGE_ENTITIES = [UsageEvent, UsageGap, UsageRollup, UsageMinuteRollup, UsageKeyMonth];
