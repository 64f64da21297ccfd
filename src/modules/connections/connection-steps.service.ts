import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { ApiError } from 'src/common/http/errors';
import { Tx } from 'src/database/transaction';
import { AuditAction } from 'src/modules/audit/audit-vocabulary';
import { AuditService } from 'src/modules/audit/audit.service';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { ConnectionRow, tierOf } from 'src/modules/connections/dto/connection.document';

export const CONNECTION_NOT_FOUND = 'connection not found';

/** The two steps every connection mutation shares: lock its row (404 when absent) and audit what it did. */
@Injectable()
export class ConnectionSteps {
  constructor(
    private readonly connections: ConnectionsRepository,
    private readonly audit: AuditService,
  ) {}

  /** Locks one connection of the workspace (of the given kinds) for the rest of `tx`; 404 otherwise. */
  async lockRow(tx: Tx, workspaceId: string, connectionId: string, kinds: ConnectionRow['kind'][]): Promise<ConnectionRow> {
    const row = await this.connections.lock(tx.manager, workspaceId, connectionId, kinds);
    if (!row) throw new ApiError(404, CONNECTION_NOT_FOUND);
    return row;
  }

  async record(tx: Tx, ws: WorkspaceContext, action: AuditAction, row: ConnectionRow, extra: Record<string, unknown> = {}): Promise<void> {
    await this.audit.record(tx, {
      workspaceId: ws.id,
      actor: ws.operator,
      action,
      target: row.id,
      detail: { connection_id: row.id, source: row.source, tier: tierOf(row), status: row.status, ...extra },
    });
  }
}
