import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { MintKeyDto } from 'src/modules/keys/dto/mint-key.dto';
import { KeysService } from 'src/modules/keys/keys.service';
import { KEY_LIST_SCHEMA, KEY_SCHEMA, MINTED_KEY_SCHEMA } from 'src/modules/keys/keys.responses';

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
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext) {
    return this.keys.list(ws);
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
