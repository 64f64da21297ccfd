import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { ReceivedAt } from 'src/common/http/received-at';
import { KeyListQueryDto } from 'src/modules/keys/dto/key-list-query.dto';
import { MintKeyDto } from 'src/modules/keys/dto/mint-key.dto';
import { DEFAULT_GRACE_SECONDS, RotateKeyDto } from 'src/modules/keys/dto/rotate-key.dto';
import { KeysService } from 'src/modules/keys/keys.service';
import { KEY_DETAIL_SCHEMA, KEY_LIST_SCHEMA, KEY_SCHEMA, MINTED_KEY_SCHEMA } from 'src/modules/keys/keys.responses';

@Controller('api/v1/workspaces/:ws/keys')
export class KeysController {
  constructor(private readonly keys: KeysService) {}

  @Post()
  @HttpCode(201)
  @Returns(MINTED_KEY_SCHEMA)
  @Answers(400, '`prefix must be ob_live or ob_test`, `ob_test keys are not allowed in a prod workspace`, `tools_mode must be full or progressive`')
  @Answers(422, '`expires_at must be an RFC 3339 timestamp`, `attributes must be at most 16384 bytes of JSON`', 'ValidationError')
  @Action('key.manage')
  mint(@Workspace() ws: WorkspaceContext, @Body() body: MintKeyDto) {
    return this.keys.mint(ws, body);
  }

  @Get()
  @Returns(KEY_LIST_SCHEMA)
  @Answers(422, '`sort` other than `created` or `last_used`', 'ValidationError')
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext, @Query() query: KeyListQueryDto) {
    return this.keys.list(ws, query.sort);
  }

  @Get(':keyId')
  @Returns(KEY_DETAIL_SCHEMA)
  @Answers(404, '`key not found` (also for a key of another workspace)')
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext, @Param('keyId') keyId: string) {
    return this.keys.get(ws, keyId);
  }

  @Post(':keyId/rotate')
  @HttpCode(200)
  @Returns(MINTED_KEY_SCHEMA)
  @Answers(404, '`key not found` (also for a key of another workspace)')
  @Answers(409, '`key is revoked and cannot be rotated`, `key has expired and cannot be rotated`, `key was rotated by a concurrent request` (`expected_last4` is not the current secret\'s, or, without it, another rotation committed after this request arrived); `workspace is frozen`')
  @Answers(422, '`grace_seconds` not an integer from 0 to 604800, `expected_last4` not a string of 4 characters', 'ValidationError')
  @Action('key.manage')
  rotate(@Workspace() ws: WorkspaceContext, @Param('keyId') keyId: string, @Body() body: RotateKeyDto, @ReceivedAt() receivedAt: number) {
    return this.keys.rotate(ws, keyId, { graceSeconds: body.grace_seconds ?? DEFAULT_GRACE_SECONDS, expectedLast4: body.expected_last4, receivedAt });
  }

  @Post(':keyId/revoke')
  @HttpCode(200)
  @Returns(KEY_SCHEMA)
  @Answers(404, '`key not found` (also for a key of another workspace)')
  @Action('key.manage')
  revoke(@Workspace() ws: WorkspaceContext, @Param('keyId') keyId: string) {
    return this.keys.revoke(ws, keyId);
  }
}
