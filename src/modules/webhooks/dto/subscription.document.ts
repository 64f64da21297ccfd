import { formatTimeRequired } from 'src/common/time/time';
import { toPublication } from 'src/modules/publication/publication.service';
import { signatureProfile } from 'src/modules/webhooks/signatures/signature-profiles';

/** A stored signing-key contract entry (timestamps as stored in jsonb: ISO text). */
export interface StoredSigningKey {
  key_version: number;
  envelope: string;
  key_id: string;
  last4: string;
  valid_from: string;
  valid_until: string;
}

export interface SubscriptionRow {
  workspace_id: string;
  connection_id: string;
  id: string;
  signature_profile: string;
  tolerance_seconds: number;
  notification_url: string | null;
  signing_keys: StoredSigningKey[];
  revision: number;
  created_at: Date;
  updated_at: Date;
}

export const SUBSCRIPTION_COLUMNS = `workspace_id, connection_id, id, signature_profile, tolerance_seconds, notification_url, signing_keys,
  revision, created_at, updated_at`;

export interface Versions {
  snapshot_version: number;
  published_version: number;
}

/** The operator's view of a subscription: key versions and validity windows, never key material. */
export function toSubscriptionDocument(row: SubscriptionRow, versions: Versions) {
  return {
    schema_version: 1,
    subscription_id: row.id,
    workspace_id: row.workspace_id,
    connection_id: row.connection_id,
    signature_profile: row.signature_profile,
    trust: signatureProfile(row.signature_profile)?.trust ?? null,
    tolerance_seconds: row.tolerance_seconds,
    notification_url: row.notification_url,
    signing_keys: row.signing_keys.map((k) => ({ key_version: k.key_version, key_id: k.key_id, last4: k.last4, valid_from: k.valid_from, valid_until: k.valid_until })),
    revision: row.revision,
    created_at: formatTimeRequired(row.created_at),
    updated_at: formatTimeRequired(row.updated_at),
    publication: toPublication(versions.snapshot_version, versions.published_version),
  };
}

/** A subscription as the gateway's ingress reads it from the snapshot (`webhook_subscriptions`). */
export function toSnapshotSubscription(row: SubscriptionRow) {
  return {
    subscription_id: row.id,
    connection_id: row.connection_id,
    signature_profile: row.signature_profile,
    trust: signatureProfile(row.signature_profile)?.trust ?? null,
    tolerance_seconds: row.tolerance_seconds,
    notification_url: row.notification_url,
    signing_keys: row.signing_keys,
  };
}
