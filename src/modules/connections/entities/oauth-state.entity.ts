import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `oauth_states`: An OAuth authorization in flight (the state's digest and the PKCE verifier). */
@Entity({ name: 'oauth_states' })
export class OAuthState {
  @PrimaryColumn({ name: 'state_hash', type: 'text' })
  stateHash: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'connection_id', type: 'text' })
  connectionId: string;

  @Column({ name: 'user_id', type: 'text' })
  userId: string;

  @Column({ name: 'code_verifier', type: 'text' })
  codeVerifier: string;

  @Column({ name: 'credential_revision', type: 'integer' })
  credentialRevision: number;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
