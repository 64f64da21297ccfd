import { Pricebook } from 'src/modules/model-providers/entities/pricebook.entity';

/** The tables model-providers owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const MODEL_PROVIDERS_ENTITIES = [Pricebook];
