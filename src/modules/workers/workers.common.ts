import { FROZEN_ALLOWED, roleGrants, WorkspaceAction } from 'src/platform/access/actions';
import { WorkspaceContext } from 'src/platform/access/context';
import { ApiError } from 'src/common/http/errors';

/**
 * What the caller may do on the Workers surface, from their role (and the frozen flag, which
 * takes every non-read action away exactly as the access guard would).
 */
export function capabilitiesFor(ws: WorkspaceContext) {
  const can = (action: WorkspaceAction) => roleGrants(ws.role, action) && (!ws.frozen || FROZEN_ALLOWED.has(action));
  return {
    can_read: can('agentops.read'),
    can_author: can('change.propose'),
    can_run: can('change.propose'),
    can_publish: can('change.apply'),
    can_take_control: can('change.apply'),
    can_manage_billing: ws.role === 'owner' && !ws.frozen,
  };
}

/** A `{detail: {...}}` answer whose detail is an object (typed refusals, the denied and digest-mismatch objects). */
export class DetailObjectError extends ApiError {
  constructor(
    status: number,
    private readonly body: Record<string, unknown>,
  ) {
    super(status, typeof body.code === 'string' ? body.code : 'conflict');
  }

  override getResponse(): object {
    return { detail: this.body };
  }
}
