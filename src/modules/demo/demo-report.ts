import { AppConfig } from 'src/config/config';
import { DEMO_EMAIL, DEMO_SUBJECT } from 'src/modules/demo/demo-data';
import { DemoSeedResult } from 'src/modules/demo/demo.seeder';

/** What `demo:seed` prints: what was written, why anything was skipped, and how to look at it. */
export function demoReport(r: DemoSeedResult, config: AppConfig): string {
  const ws = r.workspace_id;
  const api = `${config.publicUrl}/api/v1/workspaces/${ws}`;
  const lines = [
    `seeded ${ws} as ${r.operator.email ?? r.operator.user_id} (${r.operator.user_id})`,
    `keys: ${r.keys.map((k) => `${k.agent_id} ${k.key_id} (${k.status})`).join(', ')}`,
    `policy: revision ${r.policy_revision_id} published`,
    `approval policies created: ${r.approval_policies.join(', ') || 'none'}`,
    `approvals: ${r.approvals.map((a) => `${a.approval_id} ${a.tool} ${a.decision_status}`).join(', ')}`,
    `connections: ${r.connections.join(', ') || 'none'}`,
    `streams: ${r.receipts_written} receipts to ${config.redisPrefix}:receipts, ${r.usage_events_written} usage events to ${config.redisPrefix}:usage`,
    ...r.notes.map((n) => `note: ${n}`),
    '',
    'explore:',
    r.operator.email === DEMO_EMAIL && config.devIdentity
      ? `  TOKEN=$(npm run -s cli -- dev:token --sub ${DEMO_SUBJECT} --email ${DEMO_EMAIL})`
      : '  TOKEN=<a session token of a member of the workspace>',
    ...['overview', 'keys', 'policy', 'approvals?decision_status=pending', 'connections', 'receipts?limit=5'].map(
      (path) => `  curl -s "${api}/${path}" -H "Authorization: Bearer $TOKEN"`,
    ),
  ];
  return lines.join('\n');
}
