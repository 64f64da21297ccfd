import { Publication, toPublication } from 'src/modules/publication/publication.service';
import { ModelConnectionRow } from 'src/modules/connections/model-connections.service';
import { PROVIDERS, ProviderName } from 'src/modules/model-providers/providers';

/** The model-provider connection projection (never the key, the envelope or the auth profile). */
export function toModelConnectionDocument(row: ModelConnectionRow, publication: Publication) {
  return {
    schema_version: 1,
    connection_id: row.id,
    workspace_id: row.workspace_id,
    provider: row.connector_slug,
    display_name: PROVIDERS[row.connector_slug as ProviderName].display_name,
    model_pattern: row.model_config.model_pattern,
    upstream_model: row.model_config.upstream_model,
    base_url: row.model_config.base_url,
    status: row.status,
    last4: row.last4,
    credential_revision: row.credential_revision,
    publication,
  };
}

export function publicationOf(versions: { snapshot_version: number; published_version: number }): Publication {
  return toPublication(versions.snapshot_version, versions.published_version);
}

/** One entry of the snapshot's `models` (connections spec section 2). */
export function toSnapshotModel(row: ModelConnectionRow) {
  return {
    name: row.model_config.model_pattern,
    provider: row.connector_slug,
    base_url: row.model_config.base_url,
    upstream_model: row.model_config.upstream_model,
    credential: row.credential_envelope,
    connection_id: row.id,
    fallbacks: [],
  };
}
