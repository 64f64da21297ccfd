import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, FindOptionsWhere, In, IsNull, Not } from 'typeorm';
import { newId } from 'src/common/ids/ids';
import { AuthProfile, ConnectionRow } from 'src/modules/connections/dto/connection.document';
import { Connection } from 'src/modules/connections/entities/connection.entity';
import type { ModelConfig } from 'src/modules/connections/model-connections.service';

type Kind = ConnectionRow['kind'];

/** A new connection row, created `pending` without a credential. */
export interface NewConnection {
  id?: string;
  workspaceId: string;
  kind: Kind;
  connectorSlug: string;
  source: ConnectionRow['source'];
  custody: string;
  target: ConnectionRow['target'];
  authProfile: AuthProfile | Record<string, unknown>;
  authProfileDigest: string;
  clientSecretEnvelope?: string | null;
  modelConfig?: ModelConfig;
  createdBy: string;
}

/**
 * The credential a connection takes, by how it was obtained. `key`: a sealed key (an api key, a
 * broker key or a model key), a new credential revision; `grantCleared` says whether an earlier
 * OAuth grant's refresh envelope, expiry and refresh failure are cleared with it (tool and broker
 * keys: yes; model keys never hold one and keep the statement they always had). `oauth`: an
 * exchanged authorization code, a new credential revision with a fresh refresh schedule.
 * `refresh`: the same revision renewed, only while the connection is still `active` at `revision`.
 */
export type CredentialGrant =
  | { kind: 'key'; envelope: string; keyId: string; last4: string; scheme: string; grantCleared: boolean }
  | { kind: 'oauth'; envelope: string; refreshEnvelope: string | null; expiresAt: string | null; last4: string | null }
  | { kind: 'refresh'; envelope: string; refreshEnvelope: string | null; expiresAt: string | null; revision: number };

/** What the snapshot's `connections` part publishes of one row. */
export type SnapshotConnectionRow = Pick<
  ConnectionRow,
  'id' | 'connector_slug' | 'source' | 'custody' | 'target' | 'auth_profile' | 'key_id' | 'credential_scheme' | 'expires_at' | 'credential_revision'
> & { kind: 'tool' | 'catalog_provider'; credential_envelope: string };

/** What a webhook subscription needs to know of its tool connection (never a credential). */
export interface ToolShape {
  custody: string;
  source: string;
  target: string;
  profile_type: string;
  broker_reference: string | null;
}

const NOW = () => 'clock_timestamp()';

/**
 * Every statement on `connections`, for tool connections, broker registrations (`catalog_provider`)
 * and model connections alike. Writes, and reads that must see a caller's transaction, take its
 * manager first; other reads default to the pool's.
 */
@Injectable()
export class ConnectionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  // ---------- reads ----------

  /** Every non-model connection of the workspace, oldest first. */
  async listOperated(workspaceId: string): Promise<ConnectionRow[]> {
    const rows = await this.dataSource.manager.find(Connection, { where: { workspaceId, kind: Not('model') }, order: { createdAt: 'ASC', id: 'ASC' } });
    return rows.map(toConnectionRow);
  }

  /** The workspace's tool connections on any of `slugs`, oldest first. */
  async toolsOn(workspaceId: string, slugs: string[]): Promise<ConnectionRow[]> {
    if (slugs.length === 0) return [];
    const rows = await this.dataSource.manager.find(Connection, {
      where: { workspaceId, kind: 'tool', connectorSlug: In(slugs) },
      order: { createdAt: 'ASC', id: 'ASC' },
    });
    return rows.map(toConnectionRow);
  }

  /** One connection of the workspace (of one of `kinds`, any kind when omitted). */
  async find(workspaceId: string, connectionId: string, kinds?: Kind[], manager: EntityManager = this.dataSource.manager): Promise<ConnectionRow | undefined> {
    const row = await manager.findOne(Connection, { where: { id: connectionId, workspaceId, ...(kinds ? { kind: In(kinds) } : {}) } });
    return row ? toConnectionRow(row) : undefined;
  }

  /** Whether the workspace holds the connection (of one of `kinds`, any kind when omitted). */
  holds(manager: EntityManager, workspaceId: string, connectionId: string, kinds?: Kind[]): Promise<boolean> {
    return manager.exists(Connection, { where: { id: connectionId, workspaceId, ...(kinds ? { kind: In(kinds) } : {}) } });
  }

  /** One tool connection's shape, share-locked (`FOR SHARE`) for the rest of the caller's transaction. */
  async toolShape(manager: EntityManager, workspaceId: string, connectionId: string): Promise<ToolShape | undefined> {
    const row = await manager.findOne(Connection, {
      select: { id: true, custody: true, source: true, target: true, authProfile: true },
      where: { id: connectionId, workspaceId, kind: 'tool' },
      lock: { mode: 'pessimistic_read' },
    });
    if (!row) return undefined;
    const profile = row.authProfile as { type: string; broker_connection_id?: string };
    return { custody: row.custody, source: row.source, target: row.target, profile_type: profile.type, broker_reference: profile.broker_connection_id ?? null };
  }

  /** Ids of the workspace's active connections, in id order. */
  async activeIds(manager: EntityManager, workspaceId: string): Promise<string[]> {
    const rows = await manager.find(Connection, { select: { id: true }, where: { workspaceId, status: 'active' }, order: { id: 'ASC' } });
    return rows.map((r) => r.id);
  }

  /** Tool connections of the workspace that are not disabled: their connector slug and lane. */
  async liveTools(workspaceId: string, status: 'active' | 'not_disabled'): Promise<{ connectorSlug: string; source: string }[]> {
    return this.dataSource.manager.find(Connection, {
      select: { connectorSlug: true, source: true },
      where: { workspaceId, kind: 'tool', status: status === 'active' ? 'active' : Not('disabled') },
    });
  }

  /** Whether another connection than `exceptId` is live (pending or active) on the tool connector. */
  liveToolExists(manager: EntityManager, workspaceId: string, slug: string, exceptId: string): Promise<boolean> {
    return manager.exists(Connection, { where: { workspaceId, kind: 'tool', connectorSlug: slug, status: In(['pending', 'active']), id: Not(exceptId) } });
  }

  /** The workspace's active account at a broker lane. */
  async activeBrokerId(manager: EntityManager, workspaceId: string, lane: string): Promise<string | undefined> {
    const row = await manager.findOne(Connection, {
      select: { id: true },
      where: { workspaceId, kind: 'catalog_provider', connectorSlug: lane, status: 'active' },
    });
    return row?.id;
  }

  /** The connections the snapshot's `connections` part publishes: active, credentialed, not model rows, in id order. */
  async published(manager: EntityManager, workspaceId: string): Promise<SnapshotConnectionRow[]> {
    const rows = await manager.find(Connection, {
      where: { workspaceId, kind: Not('model'), status: 'active', credentialEnvelope: Not(IsNull()) },
      order: { id: 'ASC' },
    });
    return rows.map((row) => toConnectionRow(row) as SnapshotConnectionRow);
  }

  /** The overview's counts of the workspace's non-model connections. */
  async counts(workspaceId: string): Promise<{ total: number; active: number }> {
    // hand-written: both counts from one scan (count(*) FILTER), so they cannot disagree with each other
    const [row]: { total: number; active: number }[] = await this.dataSource.query(
      `SELECT count(*)::int AS total, count(*) FILTER (WHERE status = 'active')::int AS active FROM connections WHERE workspace_id = $1 AND kind <> 'model'`,
      [workspaceId],
    );
    return row;
  }

  // ---------- locks ----------

  /** Locks (`FOR UPDATE`) one connection of the workspace of one of `kinds`. */
  async lock(manager: EntityManager, workspaceId: string, connectionId: string, kinds: Kind[]): Promise<ConnectionRow | undefined> {
    const row = await manager.findOne(Connection, { where: { id: connectionId, workspaceId, kind: In(kinds) }, lock: { mode: 'pessimistic_write' } });
    return row ? toConnectionRow(row) : undefined;
  }

  /** Locks every live (pending or active) connection of `kind` on the connector or broker lane `slug`. */
  async lockLive(manager: EntityManager, workspaceId: string, kind: 'tool' | 'catalog_provider', slug: string): Promise<ConnectionRow[]> {
    const rows = await manager.find(Connection, {
      where: { workspaceId, kind, connectorSlug: slug, status: In(['pending', 'active']) },
      lock: { mode: 'pessimistic_write' },
    });
    return rows.map(toConnectionRow);
  }

  // ---------- writes ----------

  async insert(manager: EntityManager, row: NewConnection): Promise<string> {
    const id = row.id ?? newId('conn');
    await manager.insert(Connection, {
      id,
      workspaceId: row.workspaceId,
      kind: row.kind,
      connectorSlug: row.connectorSlug,
      source: row.source,
      custody: row.custody,
      target: row.target,
      status: 'pending',
      authProfile: row.authProfile as AuthProfile,
      authProfileDigest: row.authProfileDigest,
      clientSecretEnvelope: row.clientSecretEnvelope ?? null,
      modelConfig: row.modelConfig ?? null,
      createdBy: row.createdBy,
    });
    return id;
  }

  /** A pending shell re-targeted by a new start: its lane, custody, target, profile and client secret. */
  async retarget(
    manager: EntityManager,
    workspaceId: string,
    connectionId: string,
    set: Pick<Connection, 'source' | 'custody' | 'target' | 'authProfile' | 'authProfileDigest' | 'clientSecretEnvelope'>,
  ): Promise<void> {
    await manager.update(Connection, { id: connectionId, workspaceId }, { ...set, updatedAt: NOW });
  }

  /** A new auth profile (a federated connection's current broker account); `updated_at` is left as it was. */
  async setProfile(manager: EntityManager, workspaceId: string, connectionId: string, profile: AuthProfile, digest: string): Promise<void> {
    await manager.update(Connection, { id: connectionId, workspaceId }, { authProfile: profile, authProfileDigest: digest });
  }

  /** Back to `pending` under `revision` for a reconnect, with a clean refresh schedule. */
  async reopen(manager: EntityManager, workspaceId: string, connectionId: string, revision: number, clientSecretEnvelope: string | null): Promise<void> {
    await manager.update(
      Connection,
      { id: connectionId, workspaceId },
      {
        status: 'pending',
        credentialRevision: revision,
        clientSecretEnvelope,
        refreshFailure: null,
        refreshAttempts: 0,
        refreshNotBefore: null,
        updatedAt: NOW,
      },
    );
  }

  async disable(manager: EntityManager, workspaceId: string, connectionId: string): Promise<void> {
    await manager.update(Connection, { id: connectionId, workspaceId }, { status: 'disabled', updatedAt: NOW });
  }

  /** Disabled, every secret and credential trace cleared, under the next credential revision. */
  async purge(manager: EntityManager, workspaceId: string, connectionId: string): Promise<void> {
    await manager.update(
      Connection,
      { id: connectionId, workspaceId },
      {
        status: 'disabled',
        clientSecretEnvelope: null,
        credentialEnvelope: null,
        refreshEnvelope: null,
        keyId: null,
        credentialScheme: null,
        last4: null,
        expiresAt: null,
        credentialRevision: () => 'credential_revision + 1',
        refreshNotBefore: null,
        updatedAt: NOW,
      },
    );
  }

  async delete(manager: EntityManager, workspaceId: string, connectionId: string): Promise<void> {
    await manager.delete(Connection, { id: connectionId, workspaceId });
  }

  /**
   * The one statement by which a connection takes a credential (see `CredentialGrant`); returns
   * how many rows it changed (0 for a refresh whose connection moved on).
   */
  async activateCredential(manager: EntityManager, workspaceId: string, connectionId: string, grant: CredentialGrant): Promise<number> {
    const where: FindOptionsWhere<Connection> = { id: connectionId, workspaceId };
    let set: Parameters<EntityManager['update']>[2];
    switch (grant.kind) {
      case 'key':
        set = {
          status: 'active',
          credentialEnvelope: grant.envelope,
          keyId: grant.keyId,
          last4: grant.last4,
          credentialScheme: grant.scheme,
          ...(grant.grantCleared ? { refreshEnvelope: null, expiresAt: null, refreshFailure: null } : {}),
          credentialRevision: () => 'credential_revision + 1',
        };
        break;
      case 'oauth':
        set = {
          status: 'active',
          credentialEnvelope: grant.envelope,
          refreshEnvelope: grant.refreshEnvelope,
          expiresAt: dateOf(grant.expiresAt),
          last4: grant.last4,
          keyId: null,
          credentialScheme: 'bearer',
          credentialRevision: () => 'credential_revision + 1',
          refreshFailure: null,
          refreshAttempts: 0,
          refreshNotBefore: null,
        };
        break;
      case 'refresh':
        Object.assign(where, { credentialRevision: grant.revision, status: 'active' });
        set = {
          credentialEnvelope: grant.envelope,
          // A refresh that returns no new refresh token keeps the one it has.
          ...(grant.refreshEnvelope === null ? {} : { refreshEnvelope: grant.refreshEnvelope }),
          expiresAt: dateOf(grant.expiresAt),
          lastRefreshedAt: NOW,
          refreshAttempts: 0,
          refreshNotBefore: null,
          refreshLeaseUntil: null,
        };
        break;
    }
    const result = await manager.update(Connection, where, { ...set, updatedAt: NOW });
    return result.affected ?? 0;
  }

}

function dateOf(value: string | null): Date | null {
  return value === null ? null : new Date(value);
}

export function toConnectionRow(c: Connection): ConnectionRow {
  return {
    id: c.id,
    workspace_id: c.workspaceId,
    kind: c.kind as Kind,
    connector_slug: c.connectorSlug,
    source: c.source,
    custody: c.custody,
    target: c.target as ConnectionRow['target'],
    status: c.status as ConnectionRow['status'],
    auth_profile: c.authProfile,
    auth_profile_digest: c.authProfileDigest,
    client_secret_envelope: c.clientSecretEnvelope,
    credential_envelope: c.credentialEnvelope,
    refresh_envelope: c.refreshEnvelope,
    key_id: c.keyId,
    credential_scheme: c.credentialScheme,
    last4: c.last4,
    expires_at: c.expiresAt,
    last_refreshed_at: c.lastRefreshedAt,
    credential_revision: c.credentialRevision,
    refresh_failure: c.refreshFailure,
  };
}
