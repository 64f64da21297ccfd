import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { workspaceOf } from 'src/platform/access/context';
import { declaredAccess } from 'src/platform/access/decorators';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';

/** Workspace routes: the caller's role must grant the declared action (the role table), or 403 `action not permitted`. */
@Injectable()
export class RoleGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly access: WorkspaceAccess,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (declaredAccess(this.reflector, context).kind !== 'workspace') return true;
    this.access.checkRole(workspaceOf(context));
    return true;
  }
}
