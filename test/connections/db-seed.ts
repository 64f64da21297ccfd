import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';

export interface SeededWorkspace {
  workspaceId: string;
  userId: string;
}

/**
 * A user, an organization and a workspace for the repository tier of connections and
 * model-providers: the rows their tables reference, written by hand because these specs construct
 * only the repositories under test (the workspaces and identity modules own these tables).
 */
export async function seedWorkspace(dataSource: DataSource): Promise<SeededWorkspace> {
  const suffix = randomBytes(6).toString('hex');
  const userId = `usr_${suffix}`;
  const workspaceId = `ws_${suffix}`;
  await dataSource.query(`INSERT INTO users (id, issuer, subject) VALUES ($1, 'test', $1)`, [userId]);
  await dataSource.query(`INSERT INTO organizations (id) VALUES ($1)`, [`org_${suffix}`]);
  await dataSource.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, $2, $1, 'dev')`, [workspaceId, `org_${suffix}`]);
  return { workspaceId, userId };
}
