import { Publication, toPublication } from 'src/modules/publication/publication.service';
import { PROVIDERS, ProviderName } from 'src/modules/model-providers/providers';

export interface ModelConfig {
  model_pattern: string;
  upstream_model: string;
  base_url: string;
}

/** A `connections` row of kind `model`: `connector_slug` holds the provider. */
export interface ModelConnectionRow {
  id: string;
  workspace_id: string;
  connector_slug: ProviderName;
  status: 'pending' | 'active' | 'disabled';
  auth_profile_digest: string;
  model_config: ModelConfig;
  credential_envelope: string | null;
  last4: string | null;
  credential_revision: number;
}

export const MODEL_CONNECTION_COLUMNS = `id, workspace_id, connector_slug, status, auth_profile_digest, model_config, credential_envelope, last4, credential_revision`;

/** The model-provider connection projection (never the key, the envelope or the auth profile). */
export function toModelConnectionDocument(row: ModelConnectionRow, publication: Publication) {
  return {
    schema_version: 1,
    connection_id: row.id,
    workspace_id: row.workspace_id,
    provider: row.connector_slug,
    display_name: PROVIDERS[row.connector_slug].display_name,
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
