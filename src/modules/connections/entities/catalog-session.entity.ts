import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `catalog_sessions`: A broker catalog session opened for a connection. */
@Entity({ name: 'catalog_sessions' })
export class CatalogSession {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'connection_id', type: 'text' })
  connectionId: string;

  @Column({ name: 'user_id', type: 'text' })
  userId: string;

  @Column({ name: 'provider', type: 'text' })
  provider: string;

  @Column({ name: 'upstream_id', type: 'text' })
  upstreamId: string;

  @Column({ name: 'allowed_mcp_origins', type: 'jsonb' })
  allowedMcpOrigins: string[];

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;

  @Column({ name: 'consumed_at', type: 'timestamptz', precision: 3, nullable: true })
  consumedAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
