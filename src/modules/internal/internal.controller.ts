import { Body, Get, Header, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InternalRoutes } from 'src/platform/access/decorators';
import { Answers, Returns } from 'src/common/http/documented';
import { ApiError, bodyError } from 'src/common/http/errors';
import { ChecksOwnFormat } from 'src/platform/http/input-text.guard';
import { parseRfc3339 } from 'src/common/time/time';
import { SnapshotAppliedDto } from 'src/modules/publication/dto/publication.dto';
import { ROLLOUT_INSTANCE_SCHEMA } from 'src/modules/publication/publication.responses';
import { SnapshotHistoryService } from 'src/modules/publication/snapshot-history.service';
import { SNAPSHOT_SCHEMA } from 'src/modules/internal/internal.responses';
import { KEY_CONTEXT_SCHEMA } from 'src/modules/keys/keys.responses';
import { KeysService } from 'src/modules/keys/keys.service';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotUnavailableError } from 'src/modules/publication/snapshot.registry';

const SHA256_HEX = /^[0-9a-f]{64}$/;
/** How far ahead of control's clock a gateway's `applied_at` may be (its clock's skew). */
export const APPLIED_AT_SKEW_MS = 60_000;

/** Whether an `If-None-Match` header names the entity tag `etag` (or is `*`); weak tags compare equal. */
function matchesEtag(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const tags = (Array.isArray(header) ? header.join(',') : header).split(',').map((t) => t.trim().replace(/^W\//, ''));
  return tags.includes('*') || tags.includes(etag);
}

/** Reads for the gateway (service JWT only, CONTRACT.md 4.1 and 4.2). */
@InternalRoutes()
export class InternalController {
  constructor(
    private readonly keys: KeysService,
    private readonly publications: PublicationService,
    private readonly history: SnapshotHistoryService,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** The key context, served as stored JSON text (no re-serialization on the hot path). */
  @Get('keys/:keyHash')
  @Returns(KEY_CONTEXT_SCHEMA)
  @Answers(400, '`key hash must be sha256 hex`')
  @Answers(404, '`key not found`: unknown digest or missing workspace')
  @ChecksOwnFormat('keyHash')
  @Header('Content-Type', 'application/json; charset=utf-8')
  async key(@Req() req: { params: { keyHash: string } }): Promise<string> {
    // Read from the params rather than through `@Param`, so no pipe runs on the gateway's hottest route.
    const keyHash = req.params.keyHash;
    if (!SHA256_HEX.test(keyHash)) throw new ApiError(400, 'key hash must be sha256 hex');
    const context = await this.keys.context(keyHash);
    if (context === null) throw new ApiError(404, 'key not found');
    return context;
  }

  /**
   * The current signed snapshot (CONTRACT.md 4.5): the hot path's document when it holds the
   * current version, else the kept or a newly built one. `ETag: "<digest>"`; an `If-None-Match`
   * naming the kept digest of the current version answers 304 without a body, from PostgreSQL alone.
   */
  @Get('workspaces/:workspaceId/snapshot')
  @Returns(SNAPSHOT_SCHEMA)
  @Answers(304, 'Not Modified: `If-None-Match` names the current digest', null)
  @Answers(404, '`workspace not found`')
  @Answers(503, '`snapshot_unavailable`: a part cannot be built from committed state; the gateway keeps its pinned snapshot')
  async snapshot(@Param('workspaceId') workspaceId: string, @Req() req: { headers: Record<string, string | string[] | undefined> }, @Res({ passthrough: true }) res: unknown) {
    const adapter = this.adapterHost.httpAdapter;
    // A poll with the current digest costs one indexed read: no Redis read, no build.
    const known = await this.publications.currentDigest(workspaceId);
    if (known === undefined) throw new ApiError(404, 'workspace not found');
    if (known !== null && matchesEtag(req.headers['if-none-match'], `"${known}"`)) {
      adapter.setHeader(res, 'ETag', `"${known}"`);
      adapter.status(res, 304);
      return undefined;
    }
    let snapshot;
    try {
      snapshot = await this.publications.current(workspaceId);
    } catch (error) {
      if (error instanceof SnapshotUnavailableError) throw new ApiError(503, 'snapshot_unavailable');
      throw error;
    }
    if (!snapshot) throw new ApiError(404, 'workspace not found');
    const etag = `"${snapshot.digest}"`;
    adapter.setHeader(res, 'ETag', etag);
    if (matchesEtag(req.headers['if-none-match'], etag)) {
      adapter.status(res, 304);
      return undefined;
    }
    adapter.setHeader(res, 'Content-Type', 'application/json; charset=utf-8');
    return snapshot.json;
  }

  /** What a gateway instance applied (idempotent); feeds the rollout view. */
  @Post('workspaces/:workspaceId/snapshot/applied')
  @HttpCode(200)
  @Returns(ROLLOUT_INSTANCE_SCHEMA)
  @Answers(404, '`workspace not found`')
  @Answers(409, '`version N is above the current version M` (the staged version the snapshot route serves), `digest is not the digest of snapshot version N`')
  @Answers(422, '`applied_at must be an RFC 3339 timestamp`, `applied_at is in the future` (beyond 60 s of clock skew)', 'ValidationError')
  applied(@Param('workspaceId') workspaceId: string, @Body() body: SnapshotAppliedDto) {
    const appliedAt = parseRfc3339(body.applied_at);
    if (!appliedAt) throw bodyError(['applied_at'], 'applied_at must be an RFC 3339 timestamp');
    if (appliedAt.getTime() > Date.now() + APPLIED_AT_SKEW_MS) throw bodyError(['applied_at'], 'applied_at is in the future');
    return this.history.applied(workspaceId, { instance_id: body.instance_id, version: body.version, digest: body.digest, applied_at: appliedAt });
  }
}
