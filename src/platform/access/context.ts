import { createParamDecorator, ExecutionContext, InternalServerErrorException } from '@nestjs/common';
import { Role, WorkspaceAction } from 'src/platform/access/actions';
import { requestOf } from 'src/common/http/request-of';

export type Env = 'dev' | 'stage' | 'prod';

/** The operator a verified session resolved to. */
export interface OperatorContext {
  userId: string;
  email: string | null;
}

/** The workspace a guarded route acts on, with the caller's role and the declared action. */
export interface WorkspaceContext {
  id: string;
  orgId: string;
  slug: string;
  env: Env;
  frozen: boolean;
  snapshotVersion: number;
  publishedVersion: number;
  createdAt: Date;
  role: Role;
  action: WorkspaceAction;
  operator: OperatorContext;
}

export interface GuardedRequest {
  operator?: OperatorContext;
  workspace?: WorkspaceContext;
  params: Record<string, string>;
}

/** The verified operator; a 500 when the session guard did not run, so a missing guard fails loudly. */
export const Operator = createParamDecorator((_: unknown, ctx: ExecutionContext): OperatorContext => {
  const operator = requestOf<GuardedRequest>(ctx).operator;
  if (!operator) throw new InternalServerErrorException();
  return operator;
});

/** The workspace the membership guard loaded; a 500 when it did not run. */
export function workspaceOf(ctx: ExecutionContext): WorkspaceContext {
  const workspace = requestOf<GuardedRequest>(ctx).workspace;
  if (!workspace) throw new InternalServerErrorException();
  return workspace;
}

/** The authorized workspace; a 500 when the access guards did not run. */
export const Workspace = createParamDecorator((_: unknown, ctx: ExecutionContext): WorkspaceContext => workspaceOf(ctx));
