import type { OutboxMessage } from 'src/modules/notifications/events';

/** A readable one-line summary of a message, per type. */
export function summary(m: OutboxMessage): string {
  const d = m.data as Record<string, string | number | bigint | null>;
  switch (m.type) {
    case 'approval.requested':
      return `Approval requested: ${d.tool} (${d.environment}) by agent ${d.agent_id}, expires ${d.expires_at}`;
    case 'approval.vote_cast':
      return `Vote ${d.vote} on approval ${d.approval_id} by ${d.user_id} (${d.approvals}/${d.quorum})`;
    case 'approval.resolved':
      return `Approval ${d.approval_id} ${d.decision_status}`;
    case 'approval.expiring':
      return `Approval ${d.approval_id} expires at ${d.expires_at} and is still pending`;
    case 'budget.threshold_crossed':
      return `Key ${d.key_id} crossed ${d.threshold_percent}% of its monthly budget (${d.spent_usd_micros} of ${d.cap_usd_micros} micro-USD)`;
    case 'key.expiring':
      return `Key ${d.key_id} expires at ${d.expires_at}`;
    case 'key.revoked':
      return `Key ${d.key_id} was revoked`;
    case 'key.rotated':
      return `Key ${d.key_id} was rotated`;
    case 'connection.reauthorization_required':
      return `Connection ${d.connection_id} needs re-authorization (${d.reason})`;
    case 'policy.published':
      return `Policy revision ${d.revision_id} published by ${d.user_id}`;
    case 'notification_endpoint.disabled':
      return `Notification endpoint ${d.endpoint_id} was disabled (${d.reason})`;
    case 'audit.event':
      return `Audit: ${(m.data as { action?: string }).action}`;
    case 'notification.test':
      return `Test notification for endpoint ${d.endpoint_id}`;
  }
}

/** `{text, blocks}`: a receiver that takes only `{text}` reads the summary and the link. */
export function slackBody(m: OutboxMessage, webUrl: string): string {
  const ws = String(m.data.workspace_id);
  const link = typeof m.data.url === 'string' ? m.data.url : `${webUrl}/workspaces/${ws}`;
  const line = summary(m);
  return JSON.stringify({
    text: `${line} <${link}|Open>`,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: line } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: `<${link}|Open in the dashboard> · ${m.type} · ${m.timestamp}` }] },
    ],
  });
}
