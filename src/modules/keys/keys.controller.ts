import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { MintKeyDto } from 'src/modules/keys/dto/mint-key.dto';
import { KeysService } from 'src/modules/keys/keys.service';

@Controller('api/v1/workspaces/:ws/keys')
export class KeysController {
  constructor(private readonly keys: KeysService) {}

  @Post()
  @HttpCode(201)
  @Action('key.manage')
  mint(@Workspace() ws: WorkspaceContext, @Body() body: MintKeyDto) {
    return this.keys.mint(ws, body);
  }

  @Get()
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext) {
    return this.keys.list(ws);
  }

  @Post(':keyId/revoke')
  @HttpCode(200)
  @Action('key.manage')
  revoke(@Workspace() ws: WorkspaceContext, @Param('keyId') keyId: string) {
    return this.keys.revoke(ws, keyId);
  }
}
