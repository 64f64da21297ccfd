import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { badRequest, notFound } from 'src/common/http/errors';
import { CatalogService } from 'src/modules/catalog/catalog.service';
import { ConnectionsService } from 'src/modules/connections/connections.service';
import { decodeReceiptCursor, encodeV1ReceiptCursor, ReceiptPosition } from 'src/modules/receipts/receipt-cursor';
import { ReceiptReadsRepository } from 'src/modules/receipts/receipt-reads.repository';
import { toBindingDocument, toCapabilityDocument, WorkspaceBinding } from 'src/modules/routing/dto/capability.document';
import { toRouteDecision } from 'src/modules/routing/dto/route-decision.document';
import { RouteDecisionsQuery } from 'src/modules/routing/dto/routing-query.dto';
import { CAPABILITY_PREFIX, isCapabilityId, MAX_CAPABILITY_ID } from 'src/modules/routing/qualifiers.service';

/** A capability path or query parameter: the cap prefix, a tool segment, at most 256 code points. */
function requireCapabilityId(value: string): string {
  if (!isCapabilityId(value) || [...value].length > MAX_CAPABILITY_ID) throw badRequest(CAPABILITY_PREFIX);
  return value;
}

/**
 * Read-only routing views: capabilities and their bindings from the frozen catalog, decorated
 * for the workspace (its env's evidence floors, the connections it holds), and the route
 * decisions recorded on receipts. The control plane never selects a route.
 */
@Injectable()
export class CapabilitiesService {
  constructor(
    private readonly receipts: ReceiptReadsRepository,
    private readonly catalog: CatalogService,
    private readonly connections: ConnectionsService,
  ) {}

  async capabilities(ws: WorkspaceContext) {
    const connected = await this.connections.activeToolLanes(ws.id);
    return {
      env: ws.env,
      capabilities: this.catalog.capabilities().map((c) => toCapabilityDocument(c, ws.env, this.workspaceBindings(c.capability_id, connected))),
    };
  }

  async bindings(ws: WorkspaceContext, capabilityId: string) {
    const capability = this.catalog.capability(requireCapabilityId(capabilityId));
    if (!capability) throw notFound('capability not found');
    const bindings = this.workspaceBindings(capability.capability_id, await this.connections.activeToolLanes(ws.id));
    const document = toCapabilityDocument(capability, ws.env, bindings);
    return { capability: document, bindings: bindings.map((b) => toBindingDocument(document, b)) };
  }

  /** Receipts carrying a route (an object `route` in the recorded envelope), newest first. */
  async decisions(ws: WorkspaceContext, query: RouteDecisionsQuery) {
    const capability = query.capability !== undefined ? requireCapabilityId(query.capability) : undefined;
    let before: ReceiptPosition | undefined;
    if (query.before !== undefined) {
      const position = decodeReceiptCursor(ws.id, query.before);
      if (!position) throw badRequest('invalid receipt cursor');
      before = position;
    }
    const rows = await this.receipts.routeDecisions(ws.id, { capability, before, limit: query.limit + 1 });
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      decisions: page.map(toRouteDecision),
      next_before: rows.length > query.limit && last ? encodeV1ReceiptCursor(last.occurred_at, last.receipt_id) : null,
    };
  }

  private workspaceBindings(capabilityId: string, connected: Set<string>): WorkspaceBinding[] {
    return this.catalog.bindings(capabilityId).map((binding) => ({ binding, connected: connected.has(`${binding.connector_slug}@${binding.catalog_source}`) }));
  }
}
