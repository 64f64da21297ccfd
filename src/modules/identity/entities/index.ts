import { User } from 'src/modules/identity/entities/user.entity';

/** The tables identity owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const IDENTITY_ENTITIES = [User];
