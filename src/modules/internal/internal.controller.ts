import { Controller, Get, Header, Param } from '@nestjs/common';
import { Internal } from 'src/common/access/decorators';
import { Answers, Returns } from 'src/common/http/documented';
import { ApiError } from 'src/common/http/errors';
import { ChecksOwnFormat } from 'src/common/http/input-text.guard';
import { SNAPSHOT_SCHEMA } from 'src/modules/internal/internal.responses';
import { KEY_CONTEXT_SCHEMA } from 'src/modules/keys/keys.responses';
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
  @Returns(KEY_CONTEXT_SCHEMA)
  @Answers(400, '`key hash must be sha256 hex`')
  @Answers(404, '`key not found`: unknown digest or missing workspace')
  @ChecksOwnFormat('keyHash')
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
  @Returns(SNAPSHOT_SCHEMA)
  @Answers(404, '`workspace not found`')
  @Answers(503, '`snapshot_unavailable`: a part cannot be built from committed state; the gateway keeps its pinned snapshot')
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
