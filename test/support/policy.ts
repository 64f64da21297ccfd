import { DataSource } from 'typeorm';

export interface PolicyWrites {
  snapshot_version: number;
  audits: number;
  revisions: number;
  /** The `policies` row as JSON text. */
  policy: string;
}

/** Everything a policy route could write for `ws` (snapshot version, audit rows, revisions, the draft), to assert a request wrote nothing. */
export async function policyWrites(db: DataSource, ws: string): Promise<PolicyWrites> {
  const [row]: PolicyWrites[] = await db.query(
    `SELECT w.snapshot_version,
            (SELECT count(*)::int FROM audit_events a WHERE a.workspace_id = w.id) AS audits,
            (SELECT count(*)::int FROM policy_revisions r WHERE r.workspace_id = w.id) AS revisions,
            (SELECT row_to_json(p)::text FROM policies p WHERE p.workspace_id = w.id) AS policy
     FROM workspaces w WHERE w.id = $1`,
    [ws],
  );
  return row;
}
