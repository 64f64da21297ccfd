import { Schema, closedObject, nullableTimestamp, timestamp } from 'src/common/http/document-schema';
import { LANES } from 'src/modules/catalog/catalog.schema';
import { PUBLICATION_SCHEMA } from 'src/modules/publication/publication.responses';

const sessionId: Schema = { type: 'string', pattern: '^cxs_[a-f0-9]{32}$' };

/** The operator connection projection (connections spec section 2): never the broker reference, target or auth profile. */
export const CONNECTION_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  connection_id: { type: 'string' },
  workspace_id: { type: 'string' },
  connector_slug: { type: 'string' },
  connector_display_name: { type: 'string' },
  source: { enum: [...LANES] },
  tier: { enum: ['native', 'trusted_worker', 'federated'] },
  status: { enum: ['pending', 'active', 'disabled'] },
  custody: { type: 'string' },
  evidence_ceiling: { enum: ['gateway_observed', 'connector_attested', 'untrusted'] },
  last4: { type: ['string', 'null'] },
  expires_at: nullableTimestamp,
  last_refreshed_at: nullableTimestamp,
  refreshable: { type: 'boolean' },
  credential_revision: { type: 'integer', minimum: 0 },
  pending_catalog_session: { ...closedObject({ catalog_session_id: sessionId, expires_at: timestamp }), type: ['object', 'null'] },
  publication: PUBLICATION_SCHEMA,
});

export const CONNECTION_LIST_SCHEMA: Schema = closedObject({ connections: { type: 'array', items: CONNECTION_SCHEMA } });

/** The mutation envelope: the projection and the operator's next step. */
export const CONNECTION_ENVELOPE_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  connection: CONNECTION_SCHEMA,
  next: {
    oneOf: [
      closedObject({ kind: { const: 'none' } }),
      closedObject({ kind: { const: 'restricted_key' } }),
      closedObject({ kind: { const: 'redirect' }, url: { type: 'string', format: 'uri' }, expires_at: timestamp }),
      closedObject({ kind: { const: 'catalog_redirect' }, url: { type: 'string', format: 'uri' }, expires_at: timestamp, catalog_session_id: sessionId }),
    ],
  },
});
