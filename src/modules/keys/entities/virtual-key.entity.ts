import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Env } from 'src/platform/access/context';
import type { SCOPES } from 'src/modules/keys/dto/mint-key.dto';

/** `virtual_keys`: A virtual key: only the sha256 digest and last4 of the secret are stored. */
@Entity({ name: 'virtual_keys' })
export class VirtualKey {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  /** The workspace's env, copied at mint (a workspace's env never changes): the key lookup reads this table alone. */
  @Column({ name: 'env', type: 'text' })
  env: Env;

  @Column({ name: 'agent_id', type: 'text' })
  agentId: string;

  @Column({ name: 'prefix', type: 'text' })
  prefix: string;

  @Column({ name: 'key_hash', type: 'text' })
  keyHash: string;

  @Column({ name: 'last4', type: 'text' })
  last4: string;

  @Column({ name: 'allowed_models', type: 'jsonb' })
  allowedModels: string[];

  @Column({ name: 'allowed_tools', type: 'jsonb' })
  allowedTools: string[];

  @Column({ name: 'tools_mode', type: 'text' })
  toolsMode: string;

  @Column({ name: 'budget_micros_usd_month', type: 'bigint', nullable: true })
  budgetMicrosUsdMonth: string | null;

  @Column({ name: 'rpm', type: 'bigint', nullable: true })
  rpm: string | null;

  @Column({ name: 'tpm', type: 'bigint', nullable: true })
  tpm: string | null;

  @Column({ name: 'scopes', type: 'jsonb' })
  scopes: (typeof SCOPES)[number][];

  @Column({ name: 'attributes', type: 'jsonb' })
  attributes: Record<string, unknown>;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3, nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', precision: 3, nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'hot_path_pending', type: 'boolean' })
  hotPathPending: boolean;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  /** The secret a rotation replaced, valid until `previousValidUntil` (only its digest and last4). */
  @Column({ name: 'previous_key_hash', type: 'text', nullable: true })
  previousKeyHash: string | null;

  @Column({ name: 'previous_last4', type: 'text', nullable: true })
  previousLast4: string | null;

  @Column({ name: 'previous_valid_until', type: 'timestamptz', precision: 3, nullable: true })
  previousValidUntil: Date | null;

  @Column({ name: 'rotated_at', type: 'timestamptz', precision: 3, nullable: true })
  rotatedAt: Date | null;
}
