import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { newId } from 'src/common/ids/ids';
import { CarriedCtes, namedQuery, namedQueryIn } from 'src/database/named-query';
import { MATCHES_SQL } from 'src/modules/notifications/events';
import { NotificationAttempt } from 'src/modules/notifications/entities/notification-attempt.entity';
import { DeliveryState } from 'src/modules/notifications/entities/notification-delivery.entity';
import { EndpointFormat } from 'src/modules/notifications/entities/notification-endpoint.entity';

export interface NewMessage {
  id: string;
  workspaceId: string;
  type: string;
  body: string;
  /** With the instant after which its event cannot recur (`dedupe_until`). */
  dedupe: { key: string; until: Date } | null;
  createdAt: Date;
}

export interface MessageRow {
  id: string;
  workspace_id: string;
  seq: string;
  type: string;
  body: string;
  created_at: Date;
}

export interface DeliveryRow {
  message_id: string;
  endpoint_id: string;
  state: DeliveryState;
  attempts: number;
  last_attempt_at: Date | null;
  next_attempt_at: Date | null;
}

/** A claimed delivery with what its attempt needs. */
export interface ClaimedDelivery {
  endpoint_id: string;
  message_id: string;
  workspace_id: string;
  attempts: number;
  type: string;
  body: string;
  url: string;
  format: EndpointFormat;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: Date | null;
}

export interface AttemptRecord {
  workspaceId: string;
  endpointId: string;
  messageId: string;
  type: string;
  attempt: number;
  status: 'succeeded' | 'failed';
  responseStatus: number | null;
  error: NotificationAttempt['error'];
  durationMs: number;
  responseExcerpt: string;
  attemptedAt: Date;
}

const MESSAGE_COLUMNS = `id, workspace_id, seq, type, body, created_at`;

/**
 * A pending delivery of the message of CTE `message` (its `id` and `workspace_id`) to every enabled
 * endpoint of its workspace for which `taken` holds (its patterns take the type, or it is the one addressed).
 */
const deliveriesInsert = (message: string, at: string, taken: string) =>
  `INSERT INTO notification_deliveries (endpoint_id, message_id, workspace_id, state, next_attempt_at)
    SELECT e.id, ${message}.id, ${message}.workspace_id, 'pending', ${at} FROM ${message} JOIN notification_endpoints e ON e.workspace_id = ${message}.workspace_id AND e.enabled
    WHERE ${taken}
    RETURNING 1`;

/**
 * The message, and a pending delivery to every enabled endpoint of the workspace whose patterns
 * take its type (or only to `endpointId`), in one statement of the caller's transaction. A
 * `dedupe_key` already used in the workspace inserts nothing (the event was emitted before).
 */
const emitStatement = (toOne: boolean) => ({
  name: toOne ? 'notification_emit_one' : 'notification_emit',
  text: `WITH m AS (
    INSERT INTO notification_messages (id, workspace_id, type, body, dedupe_key, dedupe_until, created_at) VALUES ($1, $2, $3, $4, $5, $7, $6)
    ON CONFLICT (workspace_id, dedupe_key) DO NOTHING RETURNING id, workspace_id, seq
  ), d AS (${deliveriesInsert('m', '$6', toOne ? 'e.id = $8' : MATCHES_SQL('e.event_types', '$3'))})
  SELECT m.seq, (SELECT count(*) FROM d)::int AS deliveries FROM m`,
});
const EMIT = emitStatement(false);
const EMIT_ONE = emitStatement(true);

/**
 * The claim: due rows, oldest first, locked (`SKIP LOCKED`: another replica's claim in progress is
 * passed over), of which each endpoint takes at most its room (`$5`/`$6`, else `$7`); rows locked
 * but not taken are free again when the statement ends.
 */
const claimStatement = (name: string, due: string) => ({
  name,
  text: `WITH ${due}, ranked AS (
    SELECT due.*, row_number() OVER (PARTITION BY due.endpoint_id ORDER BY due.next_attempt_at, due.message_id) AS n FROM due
  ), picked AS (
    SELECT ranked.endpoint_id, ranked.message_id FROM ranked
    LEFT JOIN unnest($5::text[], $6::int[]) AS r(endpoint_id, room) ON r.endpoint_id = ranked.endpoint_id
    WHERE ranked.n <= COALESCE(r.room, $7)
  ), claimed AS (
    UPDATE notification_deliveries d SET claimed_until = $2 FROM picked
    WHERE d.endpoint_id = picked.endpoint_id AND d.message_id = picked.message_id
    RETURNING d.endpoint_id, d.message_id, d.workspace_id, d.attempts, d.next_attempt_at
  )
  SELECT c.endpoint_id, c.message_id, c.workspace_id, c.attempts, m.type, m.body,
    e.url, e.format, e.secret, e.previous_secret, e.previous_secret_until, (SELECT count(*) FROM due)::int AS scanned
  FROM claimed c JOIN notification_messages m ON m.id = c.message_id JOIN notification_endpoints e ON e.id = c.endpoint_id
  ORDER BY c.next_attempt_at, c.message_id`,
});

const DUE_TAKEN = `(d.claimed_until IS NULL OR d.claimed_until < $1)`;

/** Every endpoint's due rows in one walk of the due index (`$3` empty). */
const CLAIM = claimStatement(
  'notification_claim',
  `due AS (
    SELECT d.endpoint_id, d.message_id, d.next_attempt_at FROM notification_deliveries d
    JOIN notification_endpoints e ON e.id = d.endpoint_id AND e.enabled
    WHERE d.state = 'pending' AND d.next_attempt_at <= $1 AND ${DUE_TAKEN} AND d.endpoint_id <> ALL($3)
    ORDER BY d.next_attempt_at LIMIT $4 FOR UPDATE OF d SKIP LOCKED
  )`,
);

/**
 * Leaving out the endpoints of `$3` (their backlogs): the endpoints with pending rows, found by a
 * skip scan of `notification_deliveries_endpoint_due` (one probe per endpoint), then each other
 * enabled one's due rows from the same index, at most its room (so `scanned` counts at most a room
 * per endpoint), oldest first up to `$4`. The walk of the due index in time order passed every row of
 * the endpoints left out (a backlog of 100,000: 15 ms against 0.7; docs/notifications.md). The
 * endpoint is matched by `>= AND <=`, not `=`: against `=` the planner may take the due index in time
 * order and filter it to the endpoint (that same walk), which cannot give this `ORDER BY`.
 */
const CLAIM_LEAVING_OUT = claimStatement(
  'notification_claim_leaving_out',
  `RECURSIVE pending AS (
    (SELECT endpoint_id FROM notification_deliveries WHERE state = 'pending' ORDER BY endpoint_id LIMIT 1)
    UNION ALL
    SELECT (SELECT d.endpoint_id FROM notification_deliveries d WHERE d.state = 'pending' AND d.endpoint_id > p.endpoint_id ORDER BY d.endpoint_id LIMIT 1)
    FROM pending p WHERE p.endpoint_id IS NOT NULL
  ), due AS (
    SELECT x.* FROM pending p JOIN notification_endpoints e ON e.id = p.endpoint_id AND e.enabled
    CROSS JOIN LATERAL (
      SELECT d.endpoint_id, d.message_id, d.next_attempt_at FROM notification_deliveries d
      WHERE d.endpoint_id >= p.endpoint_id AND d.endpoint_id <= p.endpoint_id AND d.state = 'pending' AND d.next_attempt_at <= $1 AND ${DUE_TAKEN}
      ORDER BY d.endpoint_id, d.next_attempt_at
      LIMIT COALESCE((SELECT r.room FROM unnest($5::text[], $6::int[]) AS r(endpoint_id, room) WHERE r.endpoint_id = p.endpoint_id), $7)
      FOR UPDATE OF d SKIP LOCKED
    ) x
    WHERE p.endpoint_id <> ALL($3)
    ORDER BY x.next_attempt_at LIMIT $4
  )`,
);

/**
 * A batch of attempts' records: each attempt's log row, its delivery's next state, and each
 * endpoint's failing streak.
 */
const SETTLE = {
  name: 'notification_settle',
  text: `WITH input AS (
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::timestamptz[], $7::text[], $8::text[], $9::text[], $10::int[], $11::text[], $12::int[], $13::text[])
           AS i(endpoint_id, message_id, state, attempt, attempted_at, next_attempt_at, attempt_id, type, status, response_status, error, duration_ms, response_excerpt)
       ), d AS (
         UPDATE notification_deliveries nd SET state = i.state, attempts = i.attempt, last_attempt_at = i.attempted_at, next_attempt_at = i.next_attempt_at, claimed_until = NULL
         FROM input i WHERE nd.endpoint_id = i.endpoint_id AND nd.message_id = i.message_id
         RETURNING nd.workspace_id, nd.endpoint_id, nd.message_id
       ), a AS (
         INSERT INTO notification_attempts (id, workspace_id, endpoint_id, message_id, type, attempt, status, response_status, error, duration_ms, response_excerpt, attempted_at)
         SELECT i.attempt_id, d.workspace_id, i.endpoint_id, i.message_id, i.type, i.attempt, i.status, i.response_status, i.error, i.duration_ms, i.response_excerpt, i.attempted_at
         FROM input i JOIN d ON d.endpoint_id = i.endpoint_id AND d.message_id = i.message_id
       ), settled AS (
         SELECT i.* FROM input i JOIN d ON d.endpoint_id = i.endpoint_id AND d.message_id = i.message_id
       ), last_success AS (
         SELECT endpoint_id, max(attempted_at) FILTER (WHERE status = 'succeeded') AS at FROM settled GROUP BY endpoint_id
       ), streak AS (
         SELECT s.endpoint_id, l.at AS succeeded_at, min(s.attempted_at) FILTER (WHERE s.status = 'failed' AND (l.at IS NULL OR s.attempted_at > l.at)) AS failed_at
         FROM settled s JOIN last_success l ON l.endpoint_id = s.endpoint_id GROUP BY s.endpoint_id, l.at
       ), e AS (
         UPDATE notification_endpoints e
         SET failing_since = CASE WHEN st.failed_at IS NULL THEN NULL WHEN st.succeeded_at IS NULL THEN COALESCE(e.failing_since, st.failed_at) ELSE st.failed_at END
         FROM streak st WHERE e.id = st.endpoint_id AND (e.failing_since IS NOT NULL OR st.failed_at IS NOT NULL)
         RETURNING e.id AS endpoint_id, e.failing_since
       )
       SELECT endpoint_id, failing_since FROM e`,
};

/** Every statement on `notification_messages`, `notification_deliveries` and `notification_attempts`. */
@Injectable()
export class NotificationMessagesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The new message's `seq` and delivery count; null when its dedupe key was already used. */
  async emit(manager: EntityManager, m: NewMessage, endpointId?: string): Promise<{ seq: string; deliveries: number } | null> {
    const values = [m.id, m.workspaceId, m.type, m.body, m.dedupe?.key ?? null, m.createdAt, m.dedupe?.until ?? null, ...(endpointId ? [endpointId] : [])];
    const rows = await namedQueryIn<{ seq: string; deliveries: number }>(manager, endpointId ? EMIT_ONE : EMIT, values);
    return rows[0] ?? null;
  }

  async find(workspaceId: string, id: string): Promise<MessageRow | undefined> {
    const [row]: MessageRow[] = await this.dataSource.query(`SELECT ${MESSAGE_COLUMNS} FROM notification_messages WHERE workspace_id = $1 AND id = $2`, [workspaceId, id]);
    return row;
  }

  /**
   * Newest first, keyset on (created_at, seq): messages emitted within one millisecond (a vote and the
   * resolution it causes) keep their emission order, which a tie broken by the random id did not.
   */
  list(workspaceId: string, q: { from?: Date; to?: Date; type?: string; after?: { at: Date; seq: string }; limit: number }): Promise<MessageRow[]> {
    const values: unknown[] = [workspaceId];
    const where = ['workspace_id = $1'];
    const add = (clause: (n: number) => string, ...params: unknown[]) => {
      values.push(...params);
      where.push(clause(values.length - params.length + 1));
    };
    if (q.from && q.to) add((n) => `created_at >= $${n} AND created_at < $${n + 1}`, q.from, q.to);
    if (q.type !== undefined) add((n) => `type = $${n}`, q.type);
    if (q.after) add((n) => `(created_at, seq) < ($${n}, $${n + 1}::bigint)`, q.after.at, q.after.seq);
    values.push(q.limit);
    return this.dataSource.query(
      `SELECT ${MESSAGE_COLUMNS} FROM notification_messages WHERE ${where.join(' AND ')} ORDER BY created_at DESC, seq DESC LIMIT $${values.length}`,
      values,
    );
  }

  deliveriesOf(workspaceId: string, messageIds: string[]): Promise<DeliveryRow[]> {
    return this.dataSource.query(
      `SELECT message_id, endpoint_id, state, attempts, last_attempt_at, next_attempt_at FROM notification_deliveries
       WHERE workspace_id = $1 AND message_id = ANY($2) ORDER BY endpoint_id`,
      [workspaceId, messageIds],
    );
  }

  /** The stream's replay: messages after `seq`, in order. */
  after(workspaceId: string, seq: string, limit: number): Promise<MessageRow[]> {
    return this.dataSource.query(`SELECT ${MESSAGE_COLUMNS} FROM notification_messages WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [workspaceId, seq, limit]);
  }

  async seqOf(workspaceId: string, id: string): Promise<string | null> {
    const [row]: { seq: string }[] = await this.dataSource.query(`SELECT seq FROM notification_messages WHERE workspace_id = $1 AND id = $2`, [workspaceId, id]);
    return row?.seq ?? null;
  }

  /**
   * Claims due deliveries to enabled endpoints not in `busy`, oldest due first: at most `limit`, and
   * per endpoint at most its entry of `rooms` (else `room`), until `until`. `SKIP LOCKED` and the
   * lease keep two replicas from attempting one delivery at once. Each row carries `scanned`, the
   * due rows the statement looked at (`limit` when more may be due behind them).
   */
  claim(now: Date, until: Date, busy: string[], rooms: Map<string, number>, room: number, limit: number): Promise<(ClaimedDelivery & { scanned: number })[]> {
    // hand-written: SKIP LOCKED claim with a per-endpoint cap, reading what the attempts need; named (prepared), not a
    // plain read so never run twice (bench/notifications.ts).
    return namedQuery(this.dataSource, busy.length > 0 ? CLAIM_LEAVING_OUT : CLAIM, [now, until, busy, limit, [...rooms.keys()], [...rooms.values()], room]);
  }

  /** Clears the claims of deliveries taken but never attempted (another pass or replica may claim them at once). */
  async release(deliveries: { endpoint_id: string; message_id: string }[]): Promise<void> {
    // hand-written: a set of (endpoint, message) pairs in one statement.
    await this.dataSource.query(
      `UPDATE notification_deliveries d SET claimed_until = NULL FROM unnest($1::text[], $2::text[]) AS r(endpoint_id, message_id)
       WHERE d.endpoint_id = r.endpoint_id AND d.message_id = r.message_id AND d.state = 'pending'`,
      [deliveries.map((d) => d.endpoint_id), deliveries.map((d) => d.message_id)],
    );
  }

  /**
   * The attempts that finished together, in one statement (one round trip and one commit for them
   * all): each attempt's log row, its delivery's next state, and each endpoint's failing streak
   * (cleared when its latest attempt of the batch succeeded, else started by its first failure after
   * its latest success, or kept); nothing for an endpoint deleted meanwhile. Answers, per endpoint,
   * since when it has been failing (absent when it is not).
   */
  async settle(batch: { attempt: AttemptRecord; next: { state: DeliveryState; nextAttemptAt: Date | null } }[]): Promise<Map<string, Date>> {
    const column = <T>(pick: (x: (typeof batch)[number]) => T) => batch.map(pick);
    // hand-written: delivery's write, three tables for a batch of attempts in one statement; named (prepared), not a
    // plain read so never run twice (bench/notifications.ts).
    const rows = await namedQuery<{ endpoint_id: string; failing_since: Date | null }>(
      this.dataSource,
      SETTLE,
      [
        column((x) => x.attempt.endpointId),
        column((x) => x.attempt.messageId),
        column((x) => x.next.state),
        column((x) => x.attempt.attempt),
        column((x) => x.attempt.attemptedAt),
        column((x) => x.next.nextAttemptAt),
        column(() => newId('nat')),
        column((x) => x.attempt.type),
        column((x) => x.attempt.status),
        column((x) => x.attempt.responseStatus),
        column((x) => x.attempt.error),
        column((x) => x.attempt.durationMs),
        column((x) => x.attempt.responseExcerpt),
      ],
    );
    return new Map(rows.filter((r) => r.failing_since !== null).map((r) => [r.endpoint_id, r.failing_since as Date]));
  }

  /** Failed deliveries to the endpoint of messages since `since` become pending again (a fresh schedule); read by `notification_deliveries_failed`. */
  async requeueFailed(manager: EntityManager, workspaceId: string, endpointId: string, since: Date, now: Date): Promise<number> {
    const [, updated]: [unknown[], number] = await manager.query(
      `UPDATE notification_deliveries d SET state = 'pending', attempts = 0, next_attempt_at = $4, claimed_until = NULL
       FROM notification_messages m
       WHERE d.workspace_id = $1 AND d.endpoint_id = $2 AND d.state = 'failed' AND m.id = d.message_id AND m.created_at >= $3 RETURNING 1`,
      [workspaceId, endpointId, since, now],
    );
    return updated;
  }

  /** Delivers the message again to `endpointIds` (a delivery row is made where none existed). */
  async requeue(manager: EntityManager, workspaceId: string, messageId: string, endpointIds: string[], now: Date): Promise<void> {
    await manager.query(
      `INSERT INTO notification_deliveries (endpoint_id, message_id, workspace_id, state, next_attempt_at)
       SELECT unnest($3::text[]), $2, $1, 'pending', $4
       ON CONFLICT (endpoint_id, message_id) DO UPDATE SET state = 'pending', attempts = 0, next_attempt_at = $4, claimed_until = NULL`,
      [workspaceId, messageId, endpointIds, now],
    );
  }

  async addressedTo(manager: EntityManager, workspaceId: string, messageId: string): Promise<string[]> {
    const rows: { endpoint_id: string }[] = await manager.query(`SELECT endpoint_id FROM notification_deliveries WHERE workspace_id = $1 AND message_id = $2`, [workspaceId, messageId]);
    return rows.map((r) => r.endpoint_id);
  }

  /** Newest first, keyset on (attempted_at, id). */
  attempts(workspaceId: string, endpointId: string, q: { status?: string; after?: { at: Date; id: string }; limit: number }): Promise<NotificationAttempt[]> {
    const qb = this.dataSource.manager
      .createQueryBuilder(NotificationAttempt, 'a')
      .where('a.workspace_id = :workspaceId AND a.endpoint_id = :endpointId', { workspaceId, endpointId })
      .orderBy('a.attempted_at', 'DESC')
      .addOrderBy('a.id', 'DESC')
      .limit(q.limit);
    if (q.status !== undefined) qb.andWhere('a.status = :status', { status: q.status });
    if (q.after) qb.andWhere('(a.attempted_at, a.id) < (:at, :id)', q.after);
    return qb.getMany();
  }

  /**
   * Drops attempts older than `before`, and messages (with their deliveries) older than `before`
   * whose dedupe key cannot recur at `now` (`dedupe_until` passed): a key whose event can still
   * recur stays written, so its event is not emitted twice.
   */
  async purge(before: Date, now: Date): Promise<void> {
    await this.dataSource.query(`DELETE FROM notification_attempts WHERE attempted_at < $1`, [before]);
    await this.dataSource.query(`DELETE FROM notification_messages WHERE created_at < $1 AND (dedupe_until IS NULL OR dedupe_until <= $2)`, [before, now]);
  }
}

/** What a host statement carrying the outbox write (`emittedWith`) answers besides its own columns. */
export type EmittedColumns = {
  /** The stored body; null when the host's `source` yielded no row (nothing was emitted). */
  outbox_body: string | null;
  outbox_deliveries: number;
};

/**
 * The outbox write carried by an act's own statement, for the acts whose write is a measured hot
 * path (the audit append, a held call): instead of a round trip of its own, CTEs `outbox_m` (the
 * message, written when `source` yields a row) and `outbox_d` (its deliveries), and the columns
 * the host adds to its answer (`EmittedColumns`). Its values, from `$first`: id, workspace id, type,
 * the body before and after its one value the statement decides, `created_at`; `value` is that
 * value as JSON text, an expression over `source`. The emitter's values: `OutboxService.riding`.
 */
export const emittedWith = (source: string, first: number, value: string): CarriedCtes => {
  const [id, workspaceId, type, before, after, at] = [0, 1, 2, 3, 4, 5].map((i) => `$${first + i}`);
  return {
    // hand-written: the message and its deliveries inside the act's statement (bench/notifications.ts figure 2).
    ctes: `outbox_m AS (
    INSERT INTO notification_messages (id, workspace_id, type, body, created_at) SELECT ${id}, ${workspaceId}, ${type}, ${before} || ${value} || ${after}, ${at} FROM ${source}
    RETURNING id, workspace_id, body
  ), outbox_d AS (${deliveriesInsert('outbox_m', at, MATCHES_SQL('e.event_types', type))})`,
    columns: `(SELECT body FROM outbox_m) AS outbox_body, (SELECT count(*) FROM outbox_d)::int AS outbox_deliveries`,
  };
};

/**
 * Whether a message with this dedupe key exists in the workspace: a fragment for usage's budget
 * check, one statement per ingested batch (src/modules/keys/key-fragments.repository.ts says why).
 */
export const messageWritten = (workspaceId: string, dedupeKey: string): string =>
  // hand-written: one probe of the (workspace_id, dedupe_key) index inside usage's statement.
  `EXISTS (SELECT 1 FROM notification_messages m WHERE m.workspace_id = ${workspaceId} AND m.dedupe_key = ${dedupeKey})`;
