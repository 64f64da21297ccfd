/** Workspace roles, weakest first. */
export const ROLES = ['viewer', 'developer', 'admin', 'owner'] as const;
export type Role = (typeof ROLES)[number];

/** Every workspace action with the weakest role that holds it (core spec section 5, Workers actions). */
export const ACTION_MIN_ROLE = {
  'workspace.read': 'viewer',
  'audit.read': 'viewer',
  'usage.read': 'viewer',
  'agentops.read': 'viewer',
  'key.manage': 'developer',
  'policy.draft': 'developer',
  'change.propose': 'developer',
  'connection.manage': 'admin',
  'policy.publish': 'admin',
  'routing.publish': 'admin',
  'pricing.write': 'admin',
  'approval.decide': 'admin',
  'notification.manage': 'admin',
  'change.apply': 'admin',
  'membership.manage': 'owner',
  'approval.policy.manage': 'owner',
} as const satisfies Record<string, Role>;

export type WorkspaceAction = keyof typeof ACTION_MIN_ROLE;

/** Actions still granted in a frozen workspace; every other one answers 409. */
export const FROZEN_ALLOWED: ReadonlySet<WorkspaceAction> = new Set(['workspace.read', 'audit.read', 'usage.read', 'agentops.read']);

export function roleGrants(role: Role, action: WorkspaceAction): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(ACTION_MIN_ROLE[action]);
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}
