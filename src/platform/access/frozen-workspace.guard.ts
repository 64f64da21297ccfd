import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { workspaceOf } from 'src/platform/access/context';
import { declaredAccess } from 'src/platform/access/decorators';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';

/** Workspace routes: a frozen workspace answers 409 `workspace is frozen` to every action but the reads. */
@Injectable()
export class FrozenWorkspaceGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly access: WorkspaceAccess,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (declaredAccess(this.reflector, context).kind !== 'workspace') return true;
    this.access.checkNotFrozen(workspaceOf(context));
    return true;
  }
}
