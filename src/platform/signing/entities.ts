import { ControlSigningKey } from 'src/platform/signing/control-signing-key.entity';
import { ControlSigningPublicKey } from 'src/platform/signing/control-signing-public-key.entity';

/** The tables signing owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const SIGNING_ENTITIES = [ControlSigningKey, ControlSigningPublicKey];
