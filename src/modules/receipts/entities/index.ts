import { ReceiptCounter } from 'src/modules/receipts/entities/receipt-counter.entity';
import { ReceiptHead } from 'src/modules/receipts/entities/receipt-head.entity';
import { ReceiptRevision } from 'src/modules/receipts/entities/receipt-revision.entity';

/** The tables receipts owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const RECEIPTS_ENTITIES = [ReceiptCounter, ReceiptHead, ReceiptRevision];
