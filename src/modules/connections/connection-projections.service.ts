import { Injectable } from '@nestjs/common';
import { roleGrants } from 'src/platform/access/actions';
import { WorkspaceContext } from 'src/platform/access/context';
import { formatTimeRequired } from 'src/common/time/time';
import { BrokerLane } from 'src/modules/catalog/catalog.schema';
import { CatalogService } from 'src/modules/catalog/catalog.service';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import {
  ConnectionDocument,
  ConnectionRow,
  Next,
  PendingCatalogSession,
  toConnectionDocument,
  toMutationEnvelope,
  Versions,
} from 'src/modules/connections/dto/connection.document';
import { HandshakesRepository } from 'src/modules/connections/handshakes.repository';
import { PublicationService } from 'src/modules/publication/publication.service';

/** The operator's view of tool connections and broker registrations (spec section 2), and the mutation envelope. */
@Injectable()
export class ConnectionProjections {
  constructor(
    private readonly connections: ConnectionsRepository,
    private readonly handshakes: HandshakesRepository,
    private readonly publications: PublicationService,
    private readonly catalog: CatalogService,
  ) {}

  /** `GET /connections`: every non-model connection of the workspace, oldest first. */
  async list(ws: WorkspaceContext) {
    const rows = await this.connections.listOperated(ws.id);
    return { connections: await this.project(ws, rows, versionsOf(ws)) };
  }

  /** The workspace's tool connections grouped by connector slug (the catalog's `connections`). */
  async bySlug(ws: WorkspaceContext, slugs: string[]): Promise<Map<string, ConnectionDocument[]>> {
    const docs = await this.project(ws, await this.connections.toolsOn(ws.id, slugs), versionsOf(ws));
    const out = new Map<string, ConnectionDocument[]>();
    for (const doc of docs) out.set(doc.connector_slug, [...(out.get(doc.connector_slug) ?? []), doc]);
    return out;
  }

  /** The mutation envelope after commit: `next` only once the snapshot covering the change has published. */
  async envelope(ctx: WorkspaceContext, connectionId: string, prepared: Next) {
    const versions = await this.publications.versions(ctx.id);
    const connection = await this.projection(ctx, connectionId, versions);
    return toMutationEnvelope(connection, versions.published_version >= versions.snapshot_version ? prepared : { kind: 'none' });
  }

  async projection(ctx: WorkspaceContext, connectionId: string, versions?: Versions): Promise<ConnectionDocument> {
    const row = await this.connections.find(ctx.id, connectionId);
    const [doc] = await this.project(ctx, row ? [row] : [], versions ?? (await this.publications.versions(ctx.id)));
    return doc;
  }

  /**
   * Projections of `rows` for the caller. `pending_catalog_session` shows only to a caller holding
   * `connection.manage`, only the caller's own unconsumed, unexpired session whose provider still
   * matches the connection's broker lane, and only while the snapshot is published.
   */
  private async project(ws: WorkspaceContext, rows: ConnectionRow[], versions: Versions): Promise<ConnectionDocument[]> {
    const sessions = new Map<string, PendingCatalogSession>();
    const pending = rows.filter((r) => r.status === 'pending' && r.custody === 'federated').map((r) => r.id);
    if (pending.length > 0 && roleGrants(ws.role, 'connection.manage') && versions.published_version >= versions.snapshot_version) {
      for (const s of await this.handshakes.pendingSessions(ws.id, pending, ws.operator.userId)) {
        sessions.set(s.connection_id, { catalog_session_id: s.id, expires_at: formatTimeRequired(s.expires_at) });
      }
    }
    return rows.map((row) => toConnectionDocument(row, this.displayName(row), versions, sessions.get(row.id) ?? null));
  }

  private displayName(row: ConnectionRow): string {
    if (row.kind === 'catalog_provider') return this.catalog.lane(row.connector_slug as BrokerLane).display_name;
    return this.catalog.connector(row.connector_slug)?.display_name ?? row.connector_slug;
  }
}

function versionsOf(ws: WorkspaceContext): Versions {
  return { snapshot_version: ws.snapshotVersion, published_version: ws.publishedVersion };
}
