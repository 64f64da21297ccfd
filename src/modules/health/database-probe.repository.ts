import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

/** What readiness asks PostgreSQL (no table of any module): does it answer, and is every migration of the code applied. */
@Injectable()
export class DatabaseProbeRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** One round trip on a pooled connection. */
  async ping(): Promise<void> {
    // hand-written: the probe names no table.
    await this.dataSource.query('SELECT 1');
  }

  /** True when a migration of the code has no row in the migrations table. */
  migrationsPending(): Promise<boolean> {
    return this.dataSource.showMigrations();
  }
}
