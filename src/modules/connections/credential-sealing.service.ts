import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { ApiError } from 'src/common/http/errors';
import { Tx } from 'src/database/transaction';
import { ConnectionSteps } from 'src/modules/connections/connection-steps.service';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { ConnectionRow } from 'src/modules/connections/dto/connection.document';
import { GatewayClient, SealedSecret, SecretKind } from 'src/modules/gateway/gateway.client';
import { PublicationService } from 'src/modules/publication/publication.service';

export const LIVE_KEY_REFUSED = 'full live keys are refused; use a restricted key';

/** Keys beginning `sk_live_` are refused wherever a credential is sealed. */
export function refuseLiveKey(secret: string | undefined): void {
  if (secret !== undefined && secret.startsWith('sk_live_')) throw new ApiError(400, LIVE_KEY_REFUSED);
}

/**
 * Secrets are sealed by the gateway, bound to the connection's auth profile digest and credential
 * revision; control stores only the envelope and `last4`. Called inside the caller's transaction,
 * so a gateway failure rolls everything back (502, nothing half-written).
 */
@Injectable()
export class CredentialSealing {
  constructor(
    private readonly gateway: GatewayClient,
    private readonly connections: ConnectionsRepository,
    private readonly steps: ConnectionSteps,
    private readonly publications: PublicationService,
  ) {}

  seal(workspaceId: string, connectionId: string, digest: string, revision: number, kind: SecretKind, secret: string): Promise<SealedSecret> {
    return this.gateway.seal({ workspaceId, connectionId, authProfileDigest: digest, credentialRevision: revision, secretKind: kind, secret });
  }

  /** Seals a key through the gateway and makes the (locked) connection active with it: audit and a staged snapshot. */
  async storeKey(tx: Tx, ws: WorkspaceContext, row: ConnectionRow, kind: SecretKind, secret: string): Promise<void> {
    const sealed = await this.seal(ws.id, row.id, row.auth_profile_digest, row.credential_revision, kind, secret);
    await this.connections.activateCredential(tx.manager, ws.id, row.id, {
      kind: 'key',
      envelope: sealed.envelope,
      keyId: sealed.key_id,
      last4: sealed.last4,
      scheme: 'api_key',
      grantCleared: true,
    });
    await this.steps.record(tx, ws, 'connection.credential.store', { ...row, status: 'active' }, { last4: sealed.last4 });
    await this.publications.stage(tx, ws.id, 'connection.credential.store');
  }
}
