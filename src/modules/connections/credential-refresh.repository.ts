import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Connection } from 'src/modules/connections/entities/connection.entity';

/** A connection the refresh job claimed (its lease is held until stored, refused or deferred). */
export interface ClaimedRefresh {
  id: string;
  workspace_id: string;
  connector_slug: string;
  refresh_envelope: string;
  credential_revision: number;
  refresh_attempts: number;
}

/**
 * The refresh job's statements on `connections`: the claim, the permanent refusal and the backoff.
 * Storing a refreshed credential is `ConnectionsRepository.activateCredential` (`kind: 'refresh'`).
 */
@Injectable()
export class CredentialRefreshRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Claims up to `batch` connections whose credential expires within `windowS`, under a lease of `leaseS`. */
  async claimRefreshes(windowS: number, batch: number, leaseS: number): Promise<ClaimedRefresh[]> {
    // hand-written: SKIP LOCKED claim with a lease, in one statement (concurrent replicas never claim the same row)
    const [rows]: [ClaimedRefresh[], number] = await this.dataSource.query(
      `UPDATE connections SET refresh_lease_until = clock_timestamp() + make_interval(secs => $3)
       WHERE id IN (
         SELECT id FROM connections
         WHERE status = 'active' AND kind = 'tool' AND refresh_envelope IS NOT NULL AND refresh_failure IS NULL
           AND expires_at < clock_timestamp() + make_interval(secs => $1)
           AND (refresh_not_before IS NULL OR refresh_not_before <= clock_timestamp())
           AND (refresh_lease_until IS NULL OR refresh_lease_until < clock_timestamp())
         ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id, workspace_id, connector_slug, refresh_envelope, credential_revision, refresh_attempts`,
      [windowS, batch, leaseS],
    );
    return rows;
  }

  /** A permanent refusal: `pending` with `failure` until a reconnect, only while still `active` at `revision`; rows changed. */
  async refuseRefresh(manager: EntityManager, workspaceId: string, connectionId: string, revision: number, failure: string): Promise<number> {
    const result = await manager.update(
      Connection,
      { id: connectionId, workspaceId, credentialRevision: revision, status: 'active' },
      { refreshFailure: failure, status: 'pending', refreshLeaseUntil: null, updatedAt: () => 'clock_timestamp()' },
    );
    return result.affected ?? 0;
  }

  /** A temporary failure: the next attempt not before `waitS` from now (database clock), the lease released. */
  async deferRefresh(workspaceId: string, connectionId: string, revision: number, waitS: number): Promise<void> {
    // hand-written: the retry time is the database clock plus an interval (make_interval), as the claim compares it
    await this.dataSource.query(
      `UPDATE connections SET refresh_attempts = refresh_attempts + 1, refresh_not_before = clock_timestamp() + make_interval(secs => $4),
         refresh_lease_until = NULL
       WHERE id = $1 AND workspace_id = $2 AND credential_revision = $3`,
      [connectionId, workspaceId, revision, waitS],
    );
  }
}
