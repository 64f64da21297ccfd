import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { ModelConfig } from 'src/modules/connections/model-connections.service';
import type { AuthProfile } from 'src/modules/connections/dto/connection.document';
import type { Lane } from 'src/modules/catalog/catalog.schema';

/** `connections`: A connection of any kind: tool, broker registration (`catalog_provider`) or model provider (`model`). */
@Entity({ name: 'connections' })
export class Connection {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'kind', type: 'text' })
  kind: string;

  @Column({ name: 'connector_slug', type: 'text' })
  connectorSlug: string;

  @Column({ name: 'source', type: 'text' })
  source: Lane;

  @Column({ name: 'custody', type: 'text' })
  custody: string;

  @Column({ name: 'target', type: 'text' })
  target: string;

  @Column({ name: 'status', type: 'text' })
  status: string;

  @Column({ name: 'auth_profile', type: 'jsonb' })
  authProfile: AuthProfile;

  @Column({ name: 'auth_profile_digest', type: 'text' })
  authProfileDigest: string;

  @Column({ name: 'model_config', type: 'jsonb', nullable: true })
  modelConfig: ModelConfig | null;

  @Column({ name: 'client_secret_envelope', type: 'text', nullable: true })
  clientSecretEnvelope: string | null;

  @Column({ name: 'credential_envelope', type: 'text', nullable: true })
  credentialEnvelope: string | null;

  @Column({ name: 'refresh_envelope', type: 'text', nullable: true })
  refreshEnvelope: string | null;

  @Column({ name: 'key_id', type: 'text', nullable: true })
  keyId: string | null;

  @Column({ name: 'credential_scheme', type: 'text', nullable: true })
  credentialScheme: string | null;

  @Column({ name: 'last4', type: 'text', nullable: true })
  last4: string | null;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3, nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'last_refreshed_at', type: 'timestamptz', precision: 3, nullable: true })
  lastRefreshedAt: Date | null;

  @Column({ name: 'credential_revision', type: 'integer' })
  credentialRevision: number;

  @Column({ name: 'refresh_failure', type: 'text', nullable: true })
  refreshFailure: string | null;

  @Column({ name: 'refresh_attempts', type: 'integer' })
  refreshAttempts: number;

  @Column({ name: 'refresh_not_before', type: 'timestamptz', precision: 3, nullable: true })
  refreshNotBefore: Date | null;

  @Column({ name: 'refresh_lease_until', type: 'timestamptz', precision: 3, nullable: true })
  refreshLeaseUntil: Date | null;

  @Column({ name: 'created_by', type: 'text', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
