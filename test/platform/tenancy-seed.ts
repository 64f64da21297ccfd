import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Role } from 'src/platform/access/actions';
import { UsersRepository } from 'src/modules/identity/users.repository';
import { MembershipsRepository } from 'src/platform/tenancy/memberships.repository';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';

export interface SeededTenant {
  orgId: string;
  workspaceId: string;
  userId: string;
}

const suffix = () => randomBytes(8).toString('hex');

/** A user signed in at a test issuer, through identity's repository. */
export async function seedUser(dataSource: DataSource, email: string | null = null): Promise<string> {
  return (await new UsersRepository(dataSource).upsert('https://issuer.test', `sub-${suffix()}`, email)).id;
}

/** An organization with one workspace (version 1 staged) whose owner is a new user, through the tenancy repositories. */
export async function seedTenant(dataSource: DataSource, env: 'dev' | 'stage' | 'prod' = 'dev'): Promise<SeededTenant> {
  const workspaces = new WorkspacesRepository(dataSource);
  const memberships = new MembershipsRepository(dataSource);
  const userId = await seedUser(dataSource, `${suffix()}@example.test`);
  const orgId = `org_${suffix()}`;
  const workspaceId = `ws_${suffix()}`;
  await dataSource.transaction(async (m) => {
    await workspaces.insertOrganization(m, orgId);
    await memberships.insertOrganizationMember(m, orgId, userId);
    await workspaces.insert(m, { id: workspaceId, orgId, slug: `s-${suffix()}`, env });
    await memberships.insertMember(m, workspaceId, userId, 'owner');
  });
  return { orgId, workspaceId, userId };
}

/** Adds a member with `role` (a new user unless given). */
export async function seedMember(dataSource: DataSource, workspaceId: string, role: Role, userId?: string): Promise<string> {
  const id = userId ?? (await seedUser(dataSource));
  await dataSource.transaction((m) => new MembershipsRepository(dataSource).insertMember(m, workspaceId, id, role));
  return id;
}
