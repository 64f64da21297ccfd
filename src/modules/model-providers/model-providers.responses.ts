import { Schema, closedObject, count } from 'src/common/http/document-schema';
import { PUBLICATION_SCHEMA } from 'src/modules/publication/publication.responses';
import { PROVIDER_NAMES } from 'src/modules/model-providers/providers';


/** The model-provider connection projection (connections spec section 2): never the key, the envelope or the auth profile. */
export const MODEL_CONNECTION_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  connection_id: { type: 'string' },
  workspace_id: { type: 'string' },
  provider: { enum: [...PROVIDER_NAMES] },
  display_name: { type: 'string' },
  model_pattern: { type: 'string' },
  upstream_model: { type: 'string' },
  base_url: { type: 'string', format: 'uri' },
  status: { enum: ['pending', 'active', 'disabled'] },
  last4: { type: ['string', 'null'] },
  credential_revision: { type: 'integer', minimum: 0 },
  publication: PUBLICATION_SCHEMA,
});

export const MODEL_CONNECTION_ENVELOPE_SCHEMA: Schema = closedObject({ schema_version: { const: 1 }, connection: MODEL_CONNECTION_SCHEMA });

export const MODEL_CONNECTION_LIST_SCHEMA: Schema = closedObject({ connections: { type: 'array', items: MODEL_CONNECTION_SCHEMA } });

/** The workspace pricebook: revision 0 and no prices before the first replace. */
export const PRICING_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  workspace_id: { type: 'string' },
  revision: { type: 'integer', minimum: 0 },
  prices: {
    type: 'array',
    items: closedObject({
      model: { type: 'string' },
      input_micros_usd_per_mtok: count,
      output_micros_usd_per_mtok: count,
      cached_micros_usd_per_mtok: count,
      reasoning_micros_usd_per_mtok: count,
    }),
  },
  updated_at: { type: ['string', 'null'], format: 'date-time' },
  publication: PUBLICATION_SCHEMA,
});
