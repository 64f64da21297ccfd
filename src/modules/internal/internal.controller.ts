import { Controller, Get, Header, Param } from '@nestjs/common';
import { Internal } from 'src/common/access/decorators';
import { ApiError } from 'src/common/http/errors';
import { KeysService } from 'src/modules/keys/keys.service';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotUnavailableError } from 'src/modules/publication/snapshot.registry';

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Reads for the gateway (service JWT only, CONTRACT.md 4.1 and 4.2). */
@Controller('internal/v1')
export class InternalController {
  constructor(
    private readonly keys: KeysService,
    private readonly publications: PublicationService,
  ) {}

  /** The key context, served as stored JSON text (no re-serialization on the hot path). */
  @Get('keys/:keyHash')
  @Internal()
  @Header('Content-Type', 'application/json; charset=utf-8')
  async key(@Param('keyHash') keyHash: string): Promise<string> {
    if (!SHA256_HEX.test(keyHash)) throw new ApiError(400, 'key hash must be sha256 hex');
    const context = await this.keys.context(keyHash);
    if (context === null) throw new ApiError(404, 'key not found');
    return context;
  }

  /** The snapshot recompiled from committed state; 503 `snapshot_unavailable` when a part cannot be built. */
  @Get('workspaces/:workspaceId/snapshot')
  @Internal()
  async snapshot(@Param('workspaceId') workspaceId: string) {
    let snapshot: Record<string, unknown> | null;
    try {
      snapshot = await this.publications.build(workspaceId);
    } catch (error) {
      if (error instanceof SnapshotUnavailableError) throw new ApiError(503, 'snapshot_unavailable');
      throw error;
    }
    if (!snapshot) throw new ApiError(404, 'workspace not found');
    return snapshot;
  }
}
