import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { Action } from 'src/common/access/decorators';
import { DeleteQualifierQuery, UpsertQualifierDto } from 'src/modules/routing/dto/qualifier.dto';
import { QualifiersService } from 'src/modules/routing/qualifiers.service';

@Controller('api/v1/workspaces/:ws/route-qualifiers')
export class QualifiersController {
  constructor(private readonly qualifiers: QualifiersService) {}

  @Get()
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext) {
    return this.qualifiers.list(ws);
  }

  @Post()
  @HttpCode(200)
  @Action('routing.publish')
  upsert(@Workspace() ws: WorkspaceContext, @Body() body: UpsertQualifierDto) {
    return this.qualifiers.upsert(ws, body);
  }

  @Delete(':qualifierId')
  @Action('routing.publish')
  remove(@Workspace() ws: WorkspaceContext, @Param('qualifierId') qualifierId: string, @Query() query: DeleteQualifierQuery) {
    return this.qualifiers.remove(ws, qualifierId, query.expected_revision);
  }
}
