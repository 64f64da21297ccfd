import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { ApiError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { Tx } from 'src/database/transaction';

export interface ModelConfig {
  model_pattern: string;
  upstream_model: string;
  base_url: string;
}

/** A `connections` row of kind `model`: `connector_slug` holds the provider. */
export interface ModelConnectionRow {
  id: string;
  workspace_id: string;
  connector_slug: string;
  status: 'pending' | 'active' | 'disabled';
  auth_profile_digest: string;
  model_config: ModelConfig;
  credential_envelope: string | null;
  last4: string | null;
  credential_revision: number;
}

const COLUMNS = `id, workspace_id, connector_slug, status, auth_profile_digest, model_config, credential_envelope, last4, credential_revision`;

/** What a new model connection is created with (pending, without a credential). */
export interface NewModelConnection {
  provider: string;
  profile: Record<string, unknown>;
  profileDigest: string;
  config: ModelConfig;
  createdBy: string;
}

/** A sealed model key, as the gateway returned it (never the key itself). */
export interface SealedModelKey {
  envelope: string;
  key_id: string;
  last4: string;
  scheme: string;
}

/**
 * The rows of `connections` with `kind = 'model'`, for the model-providers module: this module
 * owns the table, model-providers decides (validation, sealing, audit, publication) and reads or
 * writes its rows only through these methods. Writes take the caller's transaction.
 */
@Injectable()
export class ModelConnectionsService {
  constructor(private readonly dataSource: DataSource) {}

  list(workspaceId: string): Promise<ModelConnectionRow[]> {
    return this.dataSource.query(`SELECT ${COLUMNS} FROM connections WHERE workspace_id = $1 AND kind = 'model' ORDER BY created_at, id`, [workspaceId]);
  }

  /** The active, credentialed model connections the snapshot's `models` lists, read in `manager`. */
  published(manager: EntityManager, workspaceId: string): Promise<ModelConnectionRow[]> {
    return manager.query(
      `SELECT ${COLUMNS} FROM connections
       WHERE workspace_id = $1 AND kind = 'model' AND status = 'active' AND model_config IS NOT NULL AND target = 'model_provider'
         AND credential_envelope IS NOT NULL
       ORDER BY created_at, id`,
      [workspaceId],
    );
  }

  /** Whether a connection that is not disabled claims `pattern`. */
  async patternClaimed(tx: Tx, workspaceId: string, pattern: string): Promise<boolean> {
    const rows: unknown[] = await tx.manager.query(
      `SELECT 1 FROM connections WHERE workspace_id = $1 AND kind = 'model' AND status <> 'disabled' AND model_config->>'model_pattern' = $2`,
      [workspaceId, pattern],
    );
    return rows.length > 0;
  }

  /** Inserts a `pending` connection without a credential (a unique violation when the pattern is claimed concurrently). */
  async insertPending(tx: Tx, workspaceId: string, input: NewModelConnection): Promise<ModelConnectionRow> {
    const [row]: ModelConnectionRow[] = await tx.manager.query(
      `INSERT INTO connections (id, workspace_id, kind, connector_slug, source, custody, target, status, auth_profile, auth_profile_digest, model_config, created_by)
       VALUES ($1, $2, 'model', $3, 'native', 'obol', 'model_provider', 'pending', $4, $5, $6, $7) RETURNING ${COLUMNS}`,
      [newId('conn'), workspaceId, input.provider, JSON.stringify(input.profile), input.profileDigest, JSON.stringify(input.config), input.createdBy],
    );
    return row;
  }

  /** Locks one model connection of the workspace for the rest of `tx`; 404 otherwise. */
  async lock(tx: Tx, workspaceId: string, connectionId: string): Promise<ModelConnectionRow> {
    const [row]: ModelConnectionRow[] = await tx.manager.query(`SELECT ${COLUMNS} FROM connections WHERE id = $1 AND workspace_id = $2 AND kind = 'model' FOR UPDATE`, [
      connectionId,
      workspaceId,
    ]);
    if (!row) throw new ApiError(404, 'connection not found');
    return row;
  }

  /** Stores the sealed key and makes the (locked) connection `active` under the next credential revision. */
  async activate(tx: Tx, workspaceId: string, connectionId: string, sealed: SealedModelKey): Promise<ModelConnectionRow> {
    const [[row]]: [ModelConnectionRow[], number] = await tx.manager.query(
      `UPDATE connections SET status = 'active', credential_envelope = $3, key_id = $4, last4 = $5, credential_scheme = $6,
         credential_revision = credential_revision + 1, updated_at = clock_timestamp()
       WHERE id = $1 AND workspace_id = $2 RETURNING ${COLUMNS}`,
      [connectionId, workspaceId, sealed.envelope, sealed.key_id, sealed.last4, sealed.scheme],
    );
    return row;
  }

  async disable(tx: Tx, workspaceId: string, connectionId: string): Promise<ModelConnectionRow> {
    const [[row]]: [ModelConnectionRow[], number] = await tx.manager.query(
      `UPDATE connections SET status = 'disabled', updated_at = clock_timestamp() WHERE id = $1 AND workspace_id = $2 RETURNING ${COLUMNS}`,
      [connectionId, workspaceId],
    );
    return row;
  }
}
