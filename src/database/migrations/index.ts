import { Foundation1763769600000 } from 'src/database/migrations/1763769600000-foundation';
import { Policy1763769602000 } from 'src/database/migrations/1763769602000-policy';
import { Approvals1763769603000 } from 'src/database/migrations/1763769603000-approvals';
import { Keys1763769601000 } from 'src/database/migrations/1763769601000-keys';
import { ReadModels1763769604000 } from 'src/database/migrations/1763769604000-read-models';
import { Connections1763769605000 } from 'src/database/migrations/1763769605000-connections';
import { ModelProviders1763769606000 } from 'src/database/migrations/1763769606000-model-providers';
import { Workers1763769607000 } from 'src/database/migrations/1763769607000-workers';
import { Webhooks1763769608000 } from 'src/database/migrations/1763769608000-webhooks';
import { ReadModelHotUpdates1763769609000 } from 'src/database/migrations/1763769609000-read-model-hot-updates';
import { ReadModelPartitionAttach1763769610000 } from 'src/database/migrations/1763769610000-read-model-partition-attach';
import { AuditChain1763769620000 } from 'src/database/migrations/1763769620000-audit-chain';
import { KeyRotation1763769630000 } from 'src/database/migrations/1763769630000-key-rotation';
import { PolicyReplay1763769650000 } from 'src/database/migrations/1763769650000-policy-replay';
import { SnapshotHistory1763769660000 } from 'src/database/migrations/1763769660000-snapshot-history';
import { UsageMinuteRollups1763769680000 } from 'src/database/migrations/1763769680000-usage-minute-rollups';
import { ReceiptFilterIndexes1763769681000 } from 'src/database/migrations/1763769681000-receipt-filter-indexes';
import { KeyUsageHotUpdates1763769690000 } from 'src/database/migrations/1763769690000-key-usage-hot-updates';
import { KeyHotPathNotify1763769700000 } from 'src/database/migrations/1763769700000-key-hot-path-notify';
import { SigningPublicKeys1763769729000 } from 'src/database/migrations/1763769729000-signing-public-keys';
import { Notifications1763769730000 } from 'src/database/migrations/1763769730000-notifications';
import { KeyEnv1763769740000 } from 'src/database/migrations/1763769740000-key-env';
import { NotificationDedupeUntil1763769750000 } from 'src/database/migrations/1763769750000-notification-dedupe-until';
import { NotificationDeliveriesEndpointDue1763769751000 } from 'src/database/migrations/1763769751000-notification-deliveries-endpoint-due';
import { UsageKeyMonths1763769752000 } from 'src/database/migrations/1763769752000-usage-key-months';
import { NotificationDeliveriesFailed1763769753000 } from 'src/database/migrations/1763769753000-notification-deliveries-failed';

/** Every migration, in order. A new migration is added here (explicit, so bundling never loses one). */
export const MIGRATIONS = [Foundation1763769600000, Keys1763769601000, Policy1763769602000, Approvals1763769603000, ReadModels1763769604000, Connections1763769605000, ModelProviders1763769606000, Workers1763769607000, Webhooks1763769608000, ReadModelHotUpdates1763769609000, ReadModelPartitionAttach1763769610000, AuditChain1763769620000, KeyRotation1763769630000, PolicyReplay1763769650000, SnapshotHistory1763769660000, UsageMinuteRollups1763769680000, ReceiptFilterIndexes1763769681000, KeyUsageHotUpdates1763769690000, KeyHotPathNotify1763769700000, SigningPublicKeys1763769729000, Notifications1763769730000, KeyEnv1763769740000, NotificationDedupeUntil1763769750000, NotificationDeliveriesEndpointDue1763769751000, UsageKeyMonths1763769752000, NotificationDeliveriesFailed1763769753000];
