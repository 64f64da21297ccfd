import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { WorkspaceContext } from 'src/platform/access/context';
import { Tx } from 'src/database/transaction';
import { ConnectionProjections } from 'src/modules/connections/connection-projections.service';
import { ConnectionsRepository, ToolShape } from 'src/modules/connections/connections.repository';
import { ConnectionRow } from 'src/modules/connections/dto/connection.document';
import { StartConnectionDto } from 'src/modules/connections/dto/connection.dto';
import { ToolConnectionsService } from 'src/modules/connections/tool-connections.service';

export type { ToolShape } from 'src/modules/connections/connections.repository';

/**
 * What other modules may ask of the connections module (it owns `connections`): reads for
 * webhooks, routing and workers, and the operator flows the demo seeder drives. Model rows are
 * served by `ModelConnectionsService`.
 */
@Injectable()
export class ConnectionsService {
  constructor(
    private readonly connections: ConnectionsRepository,
    private readonly projections: ConnectionProjections,
    private readonly tools: ToolConnectionsService,
  ) {}

  /** Whether the workspace holds the connection (of one of `kinds`, any kind when omitted), read in `manager`. */
  holds(manager: EntityManager, workspaceId: string, connectionId: string, kinds?: ConnectionRow['kind'][]): Promise<boolean> {
    return this.connections.holds(manager, workspaceId, connectionId, kinds);
  }

  /** One tool connection's custody, source, target and auth profile type, share-locked for the rest of `tx`; undefined when absent. */
  toolShape(tx: Tx, workspaceId: string, connectionId: string): Promise<ToolShape | undefined> {
    return this.connections.toolShape(tx.manager, workspaceId, connectionId);
  }

  /** Ids of the workspace's active connections, read in `manager` (a snapshot part's consistent read). */
  activeIds(manager: EntityManager, workspaceId: string): Promise<string[]> {
    return this.connections.activeIds(manager, workspaceId);
  }

  /** Connector slugs the workspace holds a tool connection on that is not disabled. */
  async toolSlugs(workspaceId: string): Promise<Set<string>> {
    return new Set((await this.connections.liveTools(workspaceId, 'not_disabled')).map((r) => r.connectorSlug));
  }

  /** `{connector_slug}@{lane}` of every active tool connection of the workspace. */
  async activeToolLanes(workspaceId: string): Promise<Set<string>> {
    return new Set((await this.connections.liveTools(workspaceId, 'active')).map((r) => `${r.connectorSlug}@${r.source}`));
  }

  // ---------- the operator flows the demo seeder drives (src/modules/demo) ----------

  list(ws: WorkspaceContext) {
    return this.projections.list(ws);
  }

  start(ctx: WorkspaceContext, body: StartConnectionDto) {
    return this.tools.start(ctx, body);
  }

  restrictedKey(ctx: WorkspaceContext, connectionId: string, apiKey: string) {
    return this.tools.restrictedKey(ctx, connectionId, apiKey);
  }
}
