import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `route_qualifiers`: An operator routing rule the gateway applies when it selects a route. */
@Entity({ name: 'route_qualifiers' })
export class RouteQualifier {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'qualifier_id', type: 'text', collation: 'C' })
  qualifierId: string;

  @Column({ name: 'revision', type: 'integer' })
  revision: number;

  @Column({ name: 'capability_id', type: 'text', nullable: true })
  capabilityId: string | null;

  @Column({ name: 'only_targets', type: 'jsonb', nullable: true })
  onlyTargets: string[] | null;

  @Column({ name: 'ignore_targets', type: 'jsonb', nullable: true })
  ignoreTargets: string[] | null;

  @Column({ name: 'pin_target', type: 'text', nullable: true })
  pinTarget: string | null;

  @Column({ name: 'prefer_auth', type: 'jsonb' })
  preferAuth: string[];

  @Column({ name: 'prefer_surface', type: 'jsonb' })
  preferSurface: string[];

  @Column({ name: 'prefer_sources', type: 'jsonb' })
  preferSources: string[];

  @Column({ name: 'min_quality', type: 'integer' })
  minQuality: number;

  @Column({ name: 'max_cost', type: 'bigint', nullable: true })
  maxCost: string | null;

  @Column({ name: 'allow_fallbacks', type: 'boolean' })
  allowFallbacks: boolean;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
