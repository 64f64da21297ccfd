import { AuditEvent } from 'src/modules/audit/entities/audit-event.entity';
import { AuditChainHead } from 'src/modules/audit/entities/audit-chain-head.entity';
import { AuditCheckpoint } from 'src/modules/audit/entities/audit-checkpoint.entity';

/** The tables audit owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const AUDIT_ENTITIES = [AuditEvent, AuditChainHead, AuditCheckpoint];
