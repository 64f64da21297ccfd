import { NOTIFICATIONS_ENTITIES } from 'src/modules/notifications/entities';
import { PUBLICATION_ENTITIES } from 'src/modules/publication/entities';
import { IDENTITY_ENTITIES } from 'src/modules/identity/entities';
import { TENANCY_ENTITIES } from 'src/platform/tenancy/entities';
import { AUDIT_ENTITIES } from 'src/modules/audit/entities';
import { SIGNING_ENTITIES } from 'src/platform/signing/entities';
import { KEYS_ENTITIES } from 'src/modules/keys/entities';
import { POLICY_ENTITIES } from 'src/modules/policy/entities';
import { APPROVALS_ENTITIES } from 'src/modules/approvals/entities';
import { RECEIPTS_ENTITIES } from 'src/modules/receipts/entities';
import { USAGE_ENTITIES } from 'src/modules/usage/entities';
import { STREAMS_ENTITIES } from 'src/modules/streams/entities';
import { CONNECTIONS_ENTITIES } from 'src/modules/connections/entities';
import { MODEL_PROVIDERS_ENTITIES } from 'src/modules/model-providers/entities';
import { ROUTING_ENTITIES } from 'src/modules/routing/entities';
import { WORKERS_ENTITIES } from 'src/modules/workers/entities';
import { WEBHOOKS_ENTITIES } from 'src/modules/webhooks/entities';

/**
 * Every entity, one per table the migrations create (partitions and `typeorm_migrations` aside),
 * gathered from the folders that own them. The application, the TypeORM CLI (ormconfig.ts) and the
 * benchmarks build their data source from this list; each module registers its own list with
 * `TypeOrmModule.forFeature`. test/platform/entities.e2e-spec.ts proves it agrees with the migrated
 * schema column by column, and test/platform/ownership.spec.ts that no repository names a table
 * another folder owns.
 */
export const ENTITIES_BY_OWNER = {
  'src/modules/notifications': NOTIFICATIONS_ENTITIES,
  'src/modules/publication': PUBLICATION_ENTITIES,
  'src/modules/identity': IDENTITY_ENTITIES,
  'src/platform/tenancy': TENANCY_ENTITIES,
  'src/modules/audit': AUDIT_ENTITIES,
  'src/platform/signing': SIGNING_ENTITIES,
  'src/modules/keys': KEYS_ENTITIES,
  'src/modules/policy': POLICY_ENTITIES,
  'src/modules/approvals': APPROVALS_ENTITIES,
  'src/modules/receipts': RECEIPTS_ENTITIES,
  'src/modules/usage': USAGE_ENTITIES,
  'src/modules/streams': STREAMS_ENTITIES,
  'src/modules/connections': CONNECTIONS_ENTITIES,
  'src/modules/model-providers': MODEL_PROVIDERS_ENTITIES,
  'src/modules/routing': ROUTING_ENTITIES,
  'src/modules/workers': WORKERS_ENTITIES,
  'src/modules/webhooks': WEBHOOKS_ENTITIES,
};

export const ENTITIES = Object.values(ENTITIES_BY_OWNER).flat();
