import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A key's known-priced spend in one UTC calendar month (`month`: its first instant), for the budget check. */
@Entity({ name: 'usage_key_months' })
export class UsageKeyMonth {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'key_id', type: 'text' })
  keyId: string;

  @PrimaryColumn({ name: 'month', type: 'timestamptz' })
  month: Date;

  /** int64 as a decimal string. */
  @Column({ name: 'usd_micros', type: 'bigint' })
  usdMicros: string;
}
