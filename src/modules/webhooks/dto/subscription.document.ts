import { formatTimeRequired } from 'src/common/time/time';
import { toPublication } from 'src/modules/publication/publication.service';
import type { WebhookSubscription } from 'src/modules/webhooks/entities/webhook-subscription.entity';
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

export interface Versions {
  snapshot_version: number;
  published_version: number;
}

/** The operator's view of a subscription: key versions and validity windows, never key material. */
export function toSubscriptionDocument(row: WebhookSubscription, versions: Versions) {
  return {
    schema_version: 1,
    subscription_id: row.id,
    workspace_id: row.workspaceId,
    connection_id: row.connectionId,
    signature_profile: row.signatureProfile,
    trust: signatureProfile(row.signatureProfile)?.trust ?? null,
    tolerance_seconds: row.toleranceSeconds,
    notification_url: row.notificationUrl,
    signing_keys: row.signingKeys.map((k) => ({ key_version: k.key_version, key_id: k.key_id, last4: k.last4, valid_from: k.valid_from, valid_until: k.valid_until })),
    revision: row.revision,
    created_at: formatTimeRequired(row.createdAt),
    updated_at: formatTimeRequired(row.updatedAt),
    publication: toPublication(versions.snapshot_version, versions.published_version),
  };
}

/** A subscription as the gateway's ingress reads it from the snapshot (`webhook_subscriptions`). */
export function toSnapshotSubscription(row: WebhookSubscription) {
  return {
    subscription_id: row.id,
    connection_id: row.connectionId,
    signature_profile: row.signatureProfile,
    trust: signatureProfile(row.signatureProfile)?.trust ?? null,
    tolerance_seconds: row.toleranceSeconds,
    notification_url: row.notificationUrl,
    signing_keys: row.signingKeys,
  };
}
