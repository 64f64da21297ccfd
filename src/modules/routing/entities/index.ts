import { RouteQualifier } from 'src/modules/routing/entities/route-qualifier.entity';

/** The tables routing owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const ROUTING_ENTITIES = [RouteQualifier];
