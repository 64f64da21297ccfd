import { CanActivate, ExecutionContext, Injectable, InternalServerErrorException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { GuardedRequest } from 'src/platform/access/context';
import { declaredAccess } from 'src/platform/access/decorators';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { requestOf } from 'src/common/http/request-of';

/**
 * Workspace routes: the operator must be a member of `:ws`, or the answer is 404 `workspace not
 * found`, the same as for a workspace that does not exist. Loads the workspace with the caller's
 * role in one query and puts it on `request.workspace`, where the role and frozen-workspace
 * guards decide from it.
 */
@Injectable()
export class MembershipGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly access: WorkspaceAccess,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const access = declaredAccess(this.reflector, context);
    if (access.kind !== 'workspace') return true;
    const request = requestOf<GuardedRequest>(context);
    if (!request.operator) throw new InternalServerErrorException();
    request.workspace = await this.access.membership(request.params.ws, request.operator, access.action);
    return true;
  }
}
