import { OutboxService } from 'src/modules/notifications/outbox.service';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { createHash } from 'node:crypto';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { singleFlight } from 'src/common/async/single-flight';
import { Transactions } from 'src/database/transactions';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { ClaimedRefresh, CredentialRefreshRepository } from 'src/modules/connections/credential-refresh.repository';
import { GatewayCallError, GatewayClient, RefreshedCredential } from 'src/modules/gateway/gateway.client';
import { PublicationService } from 'src/modules/publication/publication.service';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { errorFields } from 'src/common/logging/error-fields';

/** A credential is refreshed once it expires within this window. */
export const REFRESH_WINDOW_MS = 10 * 60 * 1000;
/** Connections claimed per pass. */
export const REFRESH_BATCH = 50;
/** A claim is a lease: a replica that dies mid-refresh releases its rows after this long. */
export const REFRESH_LEASE_S = 120;
/** The refusal code after which a grant is dead until the operator reconnects. */
export const PERMANENT_REFUSAL = 'invalid_grant';

/** The second of the minute the job runs at: the same on every replica of a deployment (derived from the Redis prefix). */
export function jitterSecond(deploymentKey: string): number {
  return createHash('sha256').update(deploymentKey).digest().readUInt32BE(0) % 60;
}

/** Wait after the n-th consecutive temporary failure: 1 min, 2, 4, ... capped at one hour. */
export function backoffMs(attempts: number): number {
  return Math.min(60_000 * 2 ** Math.max(0, attempts - 1), 3_600_000);
}

type Claimed = ClaimedRefresh;

export interface RefreshPass {
  refreshed: number;
  deferred: number;
  refused: number;
  /** Results dropped because the connection moved to another credential revision meanwhile (a reconnect). */
  superseded: number;
}

/**
 * Refreshes OAuth credentials nearing expiry through the gateway. Runs once a minute at the
 * deployment's jitter second, never at start. Rows are claimed with a lease under
 * `FOR UPDATE SKIP LOCKED`, so concurrent replicas never refresh the same connection twice. A
 * result is stored only if the connection still holds the credential revision it was claimed at.
 * A permanent refusal (`invalid_grant`) records `refresh_failure` and moves the connection to
 * `pending` (out of the snapshot) until a reconnect; a temporary one backs off. Neither wipes the
 * stored envelopes.
 */
@Injectable()
export class RefreshJob {
  private readonly logger = new Logger('refresh');
  private readonly second: number;
  private lastMinute = -1;
  private readonly pass = singleFlight(
    () => this.runOnce(),
    (error) => this.logger.warn({ msg: 'refresh pass failed', ...errorFields(error) }),
  );

  constructor(
    private readonly connections: ConnectionsRepository,
    private readonly refreshes: CredentialRefreshRepository,
    private readonly transactions: Transactions,
    private readonly gateway: GatewayClient,
    private readonly publications: PublicationService,
    private readonly workspaces: WorkspacesService,
    private readonly metrics: MetricsService,
    private readonly outbox: OutboxService,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.second = jitterSecond(config.redisPrefix);
  }

  /** Once a minute at the jitter second; a pass still running then is not joined by another (singleFlight). */
  @Interval(1000)
  tick(): Promise<void> {
    const now = new Date();
    const minute = Math.floor(now.getTime() / 60_000);
    if (now.getUTCSeconds() !== this.second || minute === this.lastMinute) return Promise.resolve();
    this.lastMinute = minute;
    return this.pass();
  }

  /** One pass over the connections due now. */
  async runOnce(): Promise<RefreshPass> {
    const pass: RefreshPass = { refreshed: 0, deferred: 0, refused: 0, superseded: 0 };
    for (const row of await this.refreshes.claimRefreshes(REFRESH_WINDOW_MS / 1000, REFRESH_BATCH, REFRESH_LEASE_S)) {
      let grant: RefreshedCredential;
      try {
        grant = await this.gateway.refresh({
          workspace_id: row.workspace_id,
          connection_id: row.id,
          connector_slug: row.connector_slug,
          refresh_envelope: row.refresh_envelope,
          credential_revision: row.credential_revision,
        });
      } catch (error) {
        if (error instanceof GatewayCallError && error.upstreamCode === PERMANENT_REFUSAL) {
          await this.refuse(row);
          pass.refused++;
          this.metrics.refreshOutcomes.inc({ outcome: 'refused' });
        } else {
          await this.defer(row);
          pass.deferred++;
          this.metrics.refreshOutcomes.inc({ outcome: 'deferred' });
        }
        continue;
      }
      const outcome = (await this.store(row, grant)) ? 'refreshed' : 'superseded';
      pass[outcome]++;
      this.metrics.refreshOutcomes.inc({ outcome });
    }
    return pass;
  }

  /** False when the connection no longer holds the claimed revision: the result is dropped. */
  private async store(row: Claimed, grant: RefreshedCredential): Promise<boolean> {
    return this.transactions.run(async (tx) => {
      await this.workspaces.lock(tx, row.workspace_id);
      const updated = await this.connections.activateCredential(tx.manager, row.workspace_id, row.id, {
        kind: 'refresh',
        envelope: grant.envelope,
        refreshEnvelope: grant.refresh_envelope,
        expiresAt: grant.expires_at,
        revision: row.credential_revision,
      });
      if (updated > 0) await this.publications.stage(tx, row.workspace_id, 'connection.credential.refresh');
      return updated > 0;
    });
  }

  private async refuse(row: Claimed): Promise<void> {
    await this.transactions.run(async (tx) => {
      await this.workspaces.lock(tx, row.workspace_id);
      const updated = await this.refreshes.refuseRefresh(tx.manager, row.workspace_id, row.id, row.credential_revision, PERMANENT_REFUSAL);
      if (updated > 0) {
        await this.publications.stage(tx, row.workspace_id, 'connection.credential.refresh_refused');
        await this.outbox.emit(tx, row.workspace_id, 'connection.reauthorization_required', { connection_id: row.id, reason: PERMANENT_REFUSAL });
      }
    });
    this.logger.warn({ msg: 'credential refresh refused; re-authorization required', workspace_id: row.workspace_id, connection_id: row.id });
  }

  private async defer(row: Claimed): Promise<void> {
    const wait = backoffMs(row.refresh_attempts + 1);
    await this.refreshes.deferRefresh(row.workspace_id, row.id, row.credential_revision, wait / 1000);
    this.logger.warn({ msg: 'credential refresh deferred', workspace_id: row.workspace_id, connection_id: row.id, retry_in_s: wait / 1000 });
  }
}
