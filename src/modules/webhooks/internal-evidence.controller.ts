import { Body, HttpCode, Param, Post, Res } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InternalRoutes } from 'src/platform/access/decorators';
import { WebhookEvidenceDto } from 'src/modules/webhooks/dto/evidence.dto';
import { WebhookEvidenceService } from 'src/modules/webhooks/webhook-evidence.service';
import { Answers, Returns } from 'src/common/http/documented';
import { EVIDENCE_SCHEMA } from 'src/modules/webhooks/webhooks.responses';

/** The gateway's side of webhook evidence (CONTRACT.md 4.2). */
@InternalRoutes('workspaces/:ws/webhook-evidence')
export class InternalEvidenceController {
  constructor(
    private readonly evidence: WebhookEvidenceService,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** 201 for a newly recorded event; 200 for a repeat of the same `evidence_id` with the same content. */
  @Post()
  @HttpCode(200)
  @Returns(EVIDENCE_SCHEMA)
  @Answers(201, 'A newly recorded event', EVIDENCE_SCHEMA)
  @Answers(404, '`workspace not found`, `connection not found`')
  @Answers(409, '`evidence_id already recorded with different content`')
  @Answers(
    422,
    '`workspace_id must match the path`, `trust must be the trust of the signature profile`, `a result cannot claim more trust than its event`, `received_at must be an RFC 3339 timestamp`',
    'ValidationError',
  )
  async record(@Param('ws') ws: string, @Body() body: WebhookEvidenceDto, @Res({ passthrough: true }) res: unknown) {
    const { created, evidence } = await this.evidence.record(ws, body);
    if (created) this.adapterHost.httpAdapter.status(res, 201);
    return evidence;
  }
}
