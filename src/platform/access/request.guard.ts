import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { declaredAccess } from 'src/platform/access/decorators';
import { FrozenWorkspaceGuard } from 'src/platform/access/frozen-workspace.guard';
import { MembershipGuard } from 'src/platform/access/membership.guard';
import { RoleGuard } from 'src/platform/access/role.guard';
import { AuthenticationGuard } from 'src/platform/auth/authentication.guard';
import { InputTextGuard } from 'src/platform/http/input-text.guard';

/**
 * The one global guard. It runs, in this order, the checks a handler's declaration needs and no
 * other: who is calling (every route), then on workspace routes member 404, role 403 and frozen
 * 409, then text no store can take (only where the handler reads a path parameter, query or body
 * that check covers). The list is worked out once per handler, so the gateway's key lookup pays
 * for the service token check alone (five global guards each returned true on it before).
 */
@Injectable()
export class RequestGuard implements CanActivate {
  private readonly plans = new WeakMap<object, CanActivate[]>();

  constructor(
    private readonly reflector: Reflector,
    private readonly authentication: AuthenticationGuard,
    private readonly membership: MembershipGuard,
    private readonly role: RoleGuard,
    private readonly frozen: FrozenWorkspaceGuard,
    private readonly inputText: InputTextGuard,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const plan = this.planOf(context);
    for (let i = 0; i < plan.length; i++) {
      const result = plan[i].canActivate(context) as boolean | Promise<boolean>;
      if (result instanceof Promise) return result.then((passed) => passed && this.rest(plan, i + 1, context));
      if (!result) return false;
    }
    return true;
  }

  /** The checks after the first one that answered with a promise; only a promise is awaited (the role, frozen and text checks answer at once). */
  private async rest(plan: CanActivate[], from: number, context: ExecutionContext): Promise<boolean> {
    for (let i = from; i < plan.length; i++) {
      const result = plan[i].canActivate(context) as boolean | Promise<boolean>;
      if (!(result instanceof Promise ? await result : result)) return false;
    }
    return true;
  }

  private planOf(context: ExecutionContext): CanActivate[] {
    const handler = context.getHandler();
    let plan = this.plans.get(handler);
    if (plan) return plan;
    // A handler without a declaration is not cached: the authentication guard answers it 500 every time.
    plan = [this.authentication];
    if (declaredAccess(this.reflector, context).kind === 'workspace') plan.push(this.membership, this.role, this.frozen);
    if (this.inputText.reads(context.getClass(), handler)) plan.push(this.inputText);
    this.plans.set(handler, plan);
    return plan;
  }
}
