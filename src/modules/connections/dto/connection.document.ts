import { formatTime } from 'src/common/time/time';
import { toPublication } from 'src/modules/publication/publication.service';

/** The gateway's own custody value, reported by native connections. */
export const NATIVE_CUSTODY = 'obol';

/** What the stored auth profile says (never returned). */
export type AuthProfile =
  | { type: 'oauth2'; connector_slug: string; authorize_url: string; token_url: string; scope: string; client_id: string }
  | { type: 'api_key'; connector_slug: string }
  | { type: 'federated'; provider: string; upstream_id: string; broker_connection_id: string }
  | { type: 'broker_api_key'; provider: string };

export interface ConnectionRow {
  id: string;
  workspace_id: string;
  kind: 'tool' | 'catalog_provider' | 'model';
  connector_slug: string;
  source: 'native' | 'broker_a' | 'broker_b';
  custody: string;
  target: 'gateway' | 'broker' | 'worker' | 'model_provider';
  status: 'pending' | 'active' | 'disabled';
  auth_profile: AuthProfile;
  auth_profile_digest: string;
  client_secret_envelope: string | null;
  credential_envelope: string | null;
  refresh_envelope: string | null;
  key_id: string | null;
  credential_scheme: string | null;
  last4: string | null;
  expires_at: Date | null;
  last_refreshed_at: Date | null;
  credential_revision: number;
  refresh_failure: string | null;
}

export const CONNECTION_COLUMNS = `id, workspace_id, kind, connector_slug, source, custody, target, status, auth_profile, auth_profile_digest,
  client_secret_envelope, credential_envelope, refresh_envelope, key_id, credential_scheme, last4, expires_at, last_refreshed_at,
  credential_revision, refresh_failure`;

export type Tier = 'native' | 'trusted_worker' | 'federated';

export function tierOf(row: Pick<ConnectionRow, 'custody' | 'target'>): Tier {
  if (row.custody === 'federated') return 'federated';
  return row.target === 'worker' ? 'trusted_worker' : 'native';
}

const CEILING: Record<Tier, string> = { native: 'gateway_observed', trusted_worker: 'connector_attested', federated: 'untrusted' };

export interface PendingCatalogSession {
  catalog_session_id: string;
  expires_at: string;
}

export interface Versions {
  snapshot_version: number;
  published_version: number;
}

/** The operator connection projection (spec section 2). */
export function toConnectionDocument(row: ConnectionRow, displayName: string, versions: Versions, session: PendingCatalogSession | null) {
  const tier = tierOf(row);
  return {
    schema_version: 1,
    connection_id: row.id,
    workspace_id: row.workspace_id,
    connector_slug: row.connector_slug,
    connector_display_name: displayName,
    source: row.source,
    tier,
    status: row.status,
    custody: row.custody,
    evidence_ceiling: CEILING[tier],
    last4: row.last4,
    expires_at: formatTime(row.expires_at),
    last_refreshed_at: formatTime(row.last_refreshed_at),
    refreshable: row.auth_profile.type === 'oauth2',
    credential_revision: row.credential_revision,
    pending_catalog_session: session,
    publication: toPublication(versions.snapshot_version, versions.published_version),
  };
}

export type ConnectionDocument = ReturnType<typeof toConnectionDocument>;

export type Next =
  | { kind: 'none' }
  | { kind: 'restricted_key' }
  | { kind: 'redirect'; url: string; expires_at: string }
  | { kind: 'catalog_redirect'; url: string; expires_at: string; catalog_session_id: string };

/** The mutation envelope. */
export function toMutationEnvelope(connection: ConnectionDocument, next: Next) {
  return { schema_version: 1, connection, next };
}
