import { Injectable } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { queryError } from 'src/common/http/errors';
import { EventHub, HubMessage } from 'src/modules/notifications/event-hub';
import { EXPLICIT_ONLY, isEventPattern, matchesType } from 'src/modules/notifications/events';
import { NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';

/** A comment line at least this often keeps proxies from closing an idle stream (the contract asks for 15 s at most). */
export const HEARTBEAT_MS = 10_000;
/** How often a stream checks that its operator is still a member (a removed member stops within this). */
export const MEMBERSHIP_CHECK_MS = 2_000;
const REPLAY_PAGE = 500;
/** A client this far behind is cut off; it resumes with `Last-Event-ID`. */
const MAX_BUFFERED_BYTES = 1 << 20;

/** Express hands the node response itself; Fastify its reply, which must be hijacked before writing to `raw`. */
function rawResponse(res: unknown): ServerResponse {
  const reply = res as { raw?: ServerResponse; hijack?: () => void };
  if (reply.raw && reply.hijack) {
    reply.hijack();
    return reply.raw;
  }
  return res as ServerResponse;
}

/** The live event stream (Server-Sent Events) of a workspace's messages. */
@Injectable()
export class EventStreamService {
  constructor(
    private readonly hub: EventHub,
    private readonly messages: NotificationMessagesRepository,
    private readonly access: WorkspaceAccess,
  ) {}

  /** Checks the filter before anything is written (a 422 is still possible then). */
  parseTypes(types: string | undefined): string[] | null {
    if (types === undefined) return null;
    const list = types.split(',').map((t) => t.trim());
    if (list.length === 0 || list.some((t) => !isEventPattern(t))) throw queryError('types', 'types must be comma-separated event types or prefix.* patterns');
    return list;
  }

  async open(ws: WorkspaceContext, types: string[] | null, after: string | undefined, res: unknown): Promise<void> {
    const wanted = (type: string) => (types ? matchesType(types, type) : type !== EXPLICIT_ONLY);
    const raw = rawResponse(res);
    let live = false;
    let closed = false;
    const buffered: HubMessage[] = [];
    const sent = new Set<string>();
    const send = (m: { id: string; type: string; body: string }) => {
      if (closed || !wanted(m.type)) return;
      raw.write(`id: ${m.id}\nevent: ${m.type}\ndata: ${m.body}\n\n`);
      if (raw.writableLength > MAX_BUFFERED_BYTES) close();
    };
    const listening = this.hub.listen(ws.id, (m) => {
      if (live) send(m);
      else buffered.push(m);
    });
    let heartbeat: NodeJS.Timeout | undefined;
    let membership: NodeJS.Timeout | undefined;
    const close = () => {
      if (closed) return;
      closed = true;
      listening.stop();
      clearInterval(heartbeat);
      clearInterval(membership);
      raw.end();
    };
    raw.on('close', close);
    // Open once every replica knows of it: a message committed anywhere from then on reaches it.
    await listening.ready;
    if (closed) return;
    raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    raw.write(': stream open\n\n');
    heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), HEARTBEAT_MS);
    membership = setInterval(() => {
      this.access.membership(ws.id, ws.operator, 'workspace.read').catch(() => close());
    }, MEMBERSHIP_CHECK_MS);

    try {
      if (after !== undefined) {
        // An id the outbox no longer holds (or never held) replays everything it still holds.
        let seq = (await this.messages.seqOf(ws.id, after)) ?? '0';
        for (;;) {
          const rows = await this.messages.after(ws.id, seq, REPLAY_PAGE);
          for (const row of rows) {
            sent.add(row.id);
            send(row);
          }
          if (rows.length < REPLAY_PAGE || closed) break;
          seq = rows[rows.length - 1].seq;
        }
      }
    } catch {
      close();
      return;
    }
    for (const m of buffered) if (!sent.has(m.id)) send(m);
    buffered.length = 0;
    live = true;
  }
}
