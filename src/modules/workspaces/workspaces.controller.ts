import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { Action, Authenticated } from 'src/platform/access/decorators';
import { Operator, OperatorContext, Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { CreateWorkspaceDto, ListWorkspacesQuery, PutMemberDto } from 'src/modules/workspaces/dto/workspace.dto';
import {
  CLIENT_ENDPOINTS_SCHEMA,
  MEMBER_LIST_SCHEMA,
  MEMBER_SCHEMA,
  OVERVIEW_SCHEMA,
  PROFILE_SCHEMA,
  WORKSPACE_LIST_SCHEMA,
  WORKSPACE_SCHEMA,
} from 'src/modules/workspaces/workspaces.responses';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

@Controller('api/v1')
export class WorkspacesController {
  constructor(private readonly workspaces: WorkspacesService) {}

  @Get('me')
  @Returns(PROFILE_SCHEMA)
  @Authenticated()
  me(@Operator() op: OperatorContext) {
    return this.workspaces.profile(op);
  }

  @Post('workspaces')
  @HttpCode(201)
  @Returns(WORKSPACE_SCHEMA)
  @Answers(400, '`env must be one of dev, stage, prod`')
  @Answers(403, '`not a member of that organization` (also for an organization that does not exist)')
  @Answers(409, '`workspace slug already exists in this org`')
  @Authenticated()
  create(@Operator() op: OperatorContext, @Body() body: CreateWorkspaceDto) {
    return this.workspaces.create(op, body.org_id, body.slug, body.env);
  }

  @Get('workspaces')
  @Returns(WORKSPACE_LIST_SCHEMA)
  @Authenticated()
  list(@Operator() op: OperatorContext, @Query() q: ListWorkspacesQuery) {
    return this.workspaces.list(op, q.org_id);
  }

  @Get('workspaces/:ws')
  @Returns(WORKSPACE_SCHEMA)
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext) {
    return this.workspaces.get(ws);
  }

  @Get('workspaces/:ws/overview')
  @Returns(OVERVIEW_SCHEMA)
  @Action('workspace.read')
  overview(@Workspace() ws: WorkspaceContext) {
    return this.workspaces.overview(ws);
  }

  @Get('workspaces/:ws/mcp')
  @Returns(CLIENT_ENDPOINTS_SCHEMA)
  @Action('workspace.read')
  clientEndpoints(@Workspace() ws: WorkspaceContext) {
    return this.workspaces.clientEndpoints(ws);
  }

  @Get('workspaces/:ws/members')
  @Returns(MEMBER_LIST_SCHEMA)
  @Action('workspace.read')
  members(@Workspace() ws: WorkspaceContext) {
    return this.workspaces.members(ws);
  }

  @Put('workspaces/:ws/members/:userId')
  @Returns(MEMBER_SCHEMA)
  @Answers(404, '`user not found`: the user never signed in')
  @Answers(409, '`workspace must keep an owner`: the last owner cannot be demoted')
  @Action('membership.manage')
  putMember(@Workspace() ws: WorkspaceContext, @Param('userId') userId: string, @Body() body: PutMemberDto) {
    return this.workspaces.putMember(ws, userId, body.role);
  }

  @Delete('workspaces/:ws/members/:userId')
  @HttpCode(204)
  @Answers(404, '`member not found`')
  @Answers(409, '`workspace must keep an owner`: the last owner cannot be removed')
  @Action('membership.manage')
  async deleteMember(@Workspace() ws: WorkspaceContext, @Param('userId') userId: string): Promise<void> {
    await this.workspaces.deleteMember(ws, userId);
  }
}
