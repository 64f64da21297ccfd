import { PolicyRevision } from 'src/modules/policy/entities/policy-revision.entity';
import { Policy } from 'src/modules/policy/entities/policy.entity';

/** The tables policy owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const POLICY_ENTITIES = [PolicyRevision, Policy];
