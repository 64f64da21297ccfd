import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { ApiError } from 'src/common/http/errors';
import { Tx } from 'src/database/transaction';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { ModelConnectionsRepository } from 'src/modules/connections/model-connections.repository';

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
  constructor(
    private readonly connections: ConnectionsRepository,
    private readonly models: ModelConnectionsRepository,
  ) {}

  list(workspaceId: string): Promise<ModelConnectionRow[]> {
    return this.models.listModels(workspaceId);
  }

  /** The active, credentialed model connections the snapshot's `models` lists, read in `manager`. */
  published(manager: EntityManager, workspaceId: string): Promise<ModelConnectionRow[]> {
    return this.models.publishedModels(manager, workspaceId);
  }

  /** Whether a connection that is not disabled claims `pattern`. */
  patternClaimed(tx: Tx, workspaceId: string, pattern: string): Promise<boolean> {
    return this.models.modelPatternClaimed(tx.manager, workspaceId, pattern);
  }

  /** Inserts a `pending` connection without a credential (a unique violation when the pattern is claimed concurrently). */
  async insertPending(tx: Tx, workspaceId: string, input: NewModelConnection): Promise<ModelConnectionRow> {
    const id = await this.connections.insert(tx.manager, {
      workspaceId,
      kind: 'model',
      connectorSlug: input.provider,
      source: 'native',
      custody: 'obol',
      target: 'model_provider',
      authProfile: input.profile,
      authProfileDigest: input.profileDigest,
      modelConfig: input.config,
      createdBy: input.createdBy,
    });
    return (await this.models.findModel(tx.manager, workspaceId, id))!;
  }

  /** Locks one model connection of the workspace for the rest of `tx`; 404 otherwise. */
  async lock(tx: Tx, workspaceId: string, connectionId: string): Promise<ModelConnectionRow> {
    const row = await this.models.findModel(tx.manager, workspaceId, connectionId, true);
    if (!row) throw new ApiError(404, 'connection not found');
    return row;
  }

  /** Stores the sealed key and makes the (locked) connection `active` under the next credential revision. */
  async activate(tx: Tx, workspaceId: string, connectionId: string, sealed: SealedModelKey): Promise<ModelConnectionRow> {
    await this.connections.activateCredential(tx.manager, workspaceId, connectionId, {
      kind: 'key',
      envelope: sealed.envelope,
      keyId: sealed.key_id,
      last4: sealed.last4,
      scheme: sealed.scheme,
      grantCleared: false,
    });
    return (await this.models.findModel(tx.manager, workspaceId, connectionId))!;
  }

  async disable(tx: Tx, workspaceId: string, connectionId: string): Promise<ModelConnectionRow> {
    await this.connections.disable(tx.manager, workspaceId, connectionId);
    return (await this.models.findModel(tx.manager, workspaceId, connectionId))!;
  }
}
