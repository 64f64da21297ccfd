import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull, Not } from 'typeorm';
import { Connection } from 'src/modules/connections/entities/connection.entity';
import type { ModelConfig, ModelConnectionRow } from 'src/modules/connections/model-connections.service';

/**
 * The reads of `connections` rows with `kind = 'model'` (model-provider connections). Their writes
 * are the shared ones of `ConnectionsRepository` (insert, `activateCredential`, disable).
 */
@Injectable()
export class ModelConnectionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async listModels(workspaceId: string): Promise<ModelConnectionRow[]> {
    const rows = await this.dataSource.manager.find(Connection, { where: { workspaceId, kind: 'model' }, order: { createdAt: 'ASC', id: 'ASC' } });
    return rows.map(toModelConnectionRow);
  }

  /** The active, credentialed model connections the snapshot's `models` lists. */
  async publishedModels(manager: EntityManager, workspaceId: string): Promise<ModelConnectionRow[]> {
    const rows = await manager.find(Connection, {
      where: { workspaceId, kind: 'model', status: 'active', modelConfig: Not(IsNull()), target: 'model_provider', credentialEnvelope: Not(IsNull()) },
      order: { createdAt: 'ASC', id: 'ASC' },
    });
    return rows.map(toModelConnectionRow);
  }

  /** Whether a model connection that is not disabled claims `pattern`. */
  async modelPatternClaimed(manager: EntityManager, workspaceId: string, pattern: string): Promise<boolean> {
    // hand-written: a predicate on a jsonb field (model_config->>'model_pattern'), which the entity API cannot name
    const rows: unknown[] = await manager.query(
      `SELECT 1 FROM connections WHERE workspace_id = $1 AND kind = 'model' AND status <> 'disabled' AND model_config->>'model_pattern' = $2`,
      [workspaceId, pattern],
    );
    return rows.length > 0;
  }

  async findModel(manager: EntityManager, workspaceId: string, connectionId: string, lock = false): Promise<ModelConnectionRow | undefined> {
    const row = await manager.findOne(Connection, {
      where: { id: connectionId, workspaceId, kind: 'model' },
      ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
    });
    return row ? toModelConnectionRow(row) : undefined;
  }
}

function toModelConnectionRow(c: Connection): ModelConnectionRow {
  return {
    id: c.id,
    workspace_id: c.workspaceId,
    connector_slug: c.connectorSlug,
    status: c.status as ModelConnectionRow['status'],
    auth_profile_digest: c.authProfileDigest,
    model_config: c.modelConfig as ModelConfig,
    credential_envelope: c.credentialEnvelope,
    last4: c.last4,
    credential_revision: c.credentialRevision,
  };
}
