import { OutboxService } from 'src/modules/notifications/outbox.service';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { createHash } from 'node:crypto';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { inTransaction } from 'src/database/transaction';
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

interface Claimed {
  id: string;
  workspace_id: string;
  connector_slug: string;
  refresh_envelope: string;
  credential_revision: number;
  refresh_attempts: number;
}

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
  private running = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly gateway: GatewayClient,
    private readonly publications: PublicationService,
    private readonly workspaces: WorkspacesService,
    private readonly metrics: MetricsService,
    private readonly outbox: OutboxService,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.second = jitterSecond(config.redisPrefix);
  }

  @Interval(1000)
  async tick(): Promise<void> {
    const now = new Date();
    const minute = Math.floor(now.getTime() / 60_000);
    if (now.getUTCSeconds() !== this.second || minute === this.lastMinute || this.running) return;
    this.lastMinute = minute;
    this.running = true;
    try {
      await this.runOnce();
    } catch (error) {
      this.logger.warn({ msg: 'refresh pass failed', ...errorFields(error) });
    } finally {
      this.running = false;
    }
  }

  /** One pass over the connections due now. */
  async runOnce(): Promise<RefreshPass> {
    const pass: RefreshPass = { refreshed: 0, deferred: 0, refused: 0, superseded: 0 };
    for (const row of await this.claim()) {
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

  private async claim(): Promise<Claimed[]> {
    const [rows]: [Claimed[], number] = await this.dataSource.query(
      `UPDATE connections SET refresh_lease_until = clock_timestamp() + make_interval(secs => $3)
       WHERE id IN (
         SELECT id FROM connections
         WHERE status = 'active' AND kind = 'tool' AND refresh_envelope IS NOT NULL AND refresh_failure IS NULL
           AND expires_at < clock_timestamp() + make_interval(secs => $1)
           AND (refresh_not_before IS NULL OR refresh_not_before <= clock_timestamp())
           AND (refresh_lease_until IS NULL OR refresh_lease_until < clock_timestamp())
         ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id, workspace_id, connector_slug, refresh_envelope, credential_revision, refresh_attempts`,
      [REFRESH_WINDOW_MS / 1000, REFRESH_BATCH, REFRESH_LEASE_S],
    );
    return rows;
  }

  /** False when the connection no longer holds the claimed revision: the result is dropped. */
  private async store(row: Claimed, grant: RefreshedCredential): Promise<boolean> {
    return inTransaction(this.dataSource, async (tx) => {
      await this.workspaces.lock(tx, row.workspace_id);
      const [, updated]: [unknown, number] = await tx.manager.query(
        `UPDATE connections SET credential_envelope = $4, refresh_envelope = COALESCE($5, refresh_envelope), expires_at = $6,
           last_refreshed_at = clock_timestamp(), refresh_attempts = 0, refresh_not_before = NULL, refresh_lease_until = NULL, updated_at = clock_timestamp()
         WHERE id = $1 AND workspace_id = $2 AND credential_revision = $3 AND status = 'active'`,
        [row.id, row.workspace_id, row.credential_revision, grant.envelope, grant.refresh_envelope, grant.expires_at],
      );
      if (updated > 0) await this.publications.stage(tx, row.workspace_id, 'connection.credential.refresh');
      return updated > 0;
    });
  }

  private async refuse(row: Claimed): Promise<void> {
    await inTransaction(this.dataSource, async (tx) => {
      await this.workspaces.lock(tx, row.workspace_id);
      const [, updated]: [unknown, number] = await tx.manager.query(
        `UPDATE connections SET refresh_failure = $4, status = 'pending', refresh_lease_until = NULL, updated_at = clock_timestamp()
         WHERE id = $1 AND workspace_id = $2 AND credential_revision = $3 AND status = 'active'`,
        [row.id, row.workspace_id, row.credential_revision, PERMANENT_REFUSAL],
      );
      if (updated > 0) {
        await this.publications.stage(tx, row.workspace_id, 'connection.credential.refresh_refused');
        await this.outbox.emit(tx, row.workspace_id, 'connection.reauthorization_required', { connection_id: row.id, reason: PERMANENT_REFUSAL });
      }
    });
    this.logger.warn({ msg: 'credential refresh refused; re-authorization required', workspace_id: row.workspace_id, connection_id: row.id });
  }

  private async defer(row: Claimed): Promise<void> {
    const wait = backoffMs(row.refresh_attempts + 1);
    await this.dataSource.query(
      `UPDATE connections SET refresh_attempts = refresh_attempts + 1, refresh_not_before = clock_timestamp() + make_interval(secs => $4), refresh_lease_until = NULL
       WHERE id = $1 AND workspace_id = $2 AND credential_revision = $3`,
      [row.id, row.workspace_id, row.credential_revision, wait / 1000],
    );
    this.logger.warn({ msg: 'credential refresh deferred', workspace_id: row.workspace_id, connection_id: row.id, retry_in_s: wait / 1000 });
  }
}
