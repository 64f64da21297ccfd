import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { Action, Authenticated } from 'src/common/access/decorators';
import { Operator, OperatorContext, Workspace, WorkspaceContext } from 'src/common/access/context';
import { CreateWorkspaceDto, ListWorkspacesQuery, PutMemberDto } from 'src/modules/workspaces/dto/workspace.dto';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

@Controller('api/v1')
export class WorkspacesController {
  constructor(private readonly workspaces: WorkspacesService) {}

  @Get('me')
  @Authenticated()
  me(@Operator() op: OperatorContext) {
    return this.workspaces.profile(op);
  }

  @Post('workspaces')
  @HttpCode(201)
  @Authenticated()
  create(@Operator() op: OperatorContext, @Body() body: CreateWorkspaceDto) {
    return this.workspaces.create(op, body.org_id, body.slug, body.env);
  }

  @Get('workspaces')
  @Authenticated()
  list(@Operator() op: OperatorContext, @Query() q: ListWorkspacesQuery) {
    return this.workspaces.list(op, q.org_id);
  }

  @Get('workspaces/:ws')
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext) {
    return this.workspaces.get(ws);
  }

  @Get('workspaces/:ws/overview')
  @Action('workspace.read')
  overview(@Workspace() ws: WorkspaceContext) {
    return this.workspaces.overview(ws);
  }

  @Get('workspaces/:ws/mcp')
  @Action('workspace.read')
  clientEndpoints(@Workspace() ws: WorkspaceContext) {
    return this.workspaces.clientEndpoints(ws);
  }

  @Get('workspaces/:ws/members')
  @Action('workspace.read')
  members(@Workspace() ws: WorkspaceContext) {
    return this.workspaces.members(ws);
  }

  @Put('workspaces/:ws/members/:userId')
  @Action('membership.manage')
  putMember(@Workspace() ws: WorkspaceContext, @Param('userId') userId: string, @Body() body: PutMemberDto) {
    return this.workspaces.putMember(ws, userId, body.role);
  }

  @Delete('workspaces/:ws/members/:userId')
  @HttpCode(204)
  @Action('membership.manage')
  async deleteMember(@Workspace() ws: WorkspaceContext, @Param('userId') userId: string): Promise<void> {
    await this.workspaces.deleteMember(ws, userId);
  }
}
