import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { StoredAuditRow } from 'src/common/crypto/audit-chain';
import { CarriedCtes, NamedStatement, namedQuery, namedQueryIn } from 'src/database/named-query';
import { AuditEvent } from 'src/modules/audit/entities/audit-event.entity';

/** Rows read per statement while streaming a trail: memory stays bounded whatever its length. */
export const TRAIL_BATCH = 1000;

/** A stored audit row as the listing reads it (no chain columns). */
export type AuditRow = Omit<StoredAuditRow, 'seq' | 'chain_hash'>;

/** The values of one appended link; the database adds `occurred_at`, `seq` and the link itself. */
export interface AuditAppend {
  id: string;
  workspaceId: string;
  actorUserId: string | null;
  actorEmail: string | null;
  action: string;
  target: string | null;
  detailJson: string;
  genesisHash: string;
  /** The canonical JSON around `occurred_at` and `seq` (canonicalParts): before, between, after. */
  before: string;
  between: string;
  after: string;
}

/** A write carried by the append (AuditService.carry): its statement and this row's values for it. */
export interface CarriedWrite {
  statement: NamedStatement;
  values: unknown[];
}

/** The listing's filters: a window, optional equalities and the keyset position after which to read. */
export interface AuditPageFilter {
  workspaceId: string;
  from: Date;
  to: Date;
  actions: readonly string[];
  action?: string;
  userId?: string;
  target?: string;
  after?: { at: Date; id: string };
  limit: number;
}

/** `occurred_at` as hashed: RFC 3339 UTC, six fractional digits (as `formatChainTime`). */
const CHAIN_TIME = `to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
const LINK = (prev: string, seq: string) => `encode(sha256(decode(${prev}, 'hex') || convert_to($9 || ${CHAIN_TIME} || $10 || (${seq})::text || $11, 'UTF8')), 'hex')`;
/**
 * The append: the row as the next link of its workspace's chain, `ev`, followed by what it carries
 * (`extra`: the outbox's `audit.event`, AuditService.carry), whose values follow the row's eleven.
 */
const appendStatement = (extra?: CarriedCtes): NamedStatement => ({
  name: extra ? 'audit_append_carrying' : 'audit_append',
  // hand-written: the chain's integrity guarantee in one statement (docs/audit.md): the ON CONFLICT upsert of the chain
  // head locks it until the act commits, and the link (SHA-256 over the previous link and the row's canonical JSON,
  // whose occurred_at and seq only the database knows) is computed there.
  text: `
  WITH now AS (SELECT date_trunc('milliseconds', clock_timestamp()) AS at),
  head AS (
    INSERT INTO audit_chain_heads AS h (workspace_id, seq, chain_hash) SELECT $2, 1, ${LINK('$8', '1')} FROM now
    ON CONFLICT (workspace_id) DO UPDATE SET seq = h.seq + 1, chain_hash = (SELECT ${LINK('h.chain_hash', 'h.seq + 1')} FROM now)
    RETURNING seq, chain_hash
  ), ev AS (
    INSERT INTO audit_events (id, workspace_id, actor_user_id, actor_email, action, target, detail, occurred_at, seq, chain_hash)
    SELECT $1, $2, $3, $4, $5, $6, $7, now.at, head.seq, head.chain_hash FROM head, now
    RETURNING id, workspace_id, occurred_at
  )${extra ? `, ${extra.ctes}` : ''}
  SELECT ev.occurred_at${extra ? `, ${extra.columns}` : ''} FROM ev`,
});
const APPEND = appendStatement();
// hand-written: the export's and the check's batch read, a named statement (a trail is read in many batches).
const TRAIL_ROWS = {
  name: 'audit_trail_rows',
  text: `SELECT id, workspace_id, seq, actor_user_id, actor_email, action, target, detail, occurred_at, chain_hash FROM audit_events
         WHERE workspace_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT ${TRAIL_BATCH}`,
};

/** `audit_events` (and, through the append statement, `audit_chain_heads`): the only writer of the trail. */
@Injectable()
export class AuditEventsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The append statement carrying what `extra` gives for values numbered from `first` (built once, by AuditService.carry). */
  carrying(extra: (first: number) => CarriedCtes): NamedStatement {
    return appendStatement(extra(12));
  }

  /**
   * Appends the row as the next link of its workspace's chain, in `manager`'s transaction, with the
   * write it carries if any; the answer: the stored `occurred_at`, and the carried write's columns.
   */
  async append(manager: EntityManager, row: AuditAppend, carried?: CarriedWrite): Promise<{ occurred_at: Date } & Record<string, unknown>> {
    const values = [row.id, row.workspaceId, row.actorUserId, row.actorEmail, row.action, row.target, row.detailJson, row.genesisHash, row.before, row.between, row.after];
    const [answer] = await namedQueryIn<{ occurred_at: Date }>(manager, carried?.statement ?? APPEND, carried ? [...values, ...carried.values] : values);
    return answer;
  }

  /** A page of the listing, newest first on (occurred_at, id). */
  page(filter: AuditPageFilter): Promise<AuditRow[]> {
    const values: unknown[] = [filter.workspaceId, filter.from, filter.to, filter.actions];
    const where = [`workspace_id = $1`, `occurred_at >= $2`, `occurred_at < $3`, `action = ANY($4)`];
    const add = (clause: (n: number) => string, ...params: unknown[]) => {
      values.push(...params);
      where.push(clause(values.length - params.length + 1));
    };
    if (filter.action !== undefined) add((n) => `action = $${n}`, filter.action);
    if (filter.userId !== undefined) add((n) => `actor_user_id = $${n}`, filter.userId);
    if (filter.target !== undefined) add((n) => `target = $${n}`, filter.target);
    if (filter.after) add((n) => `(occurred_at, id) < ($${n}, $${n + 1})`, filter.after.at, filter.after.id);
    values.push(filter.limit);
    // hand-written: keyset page over (occurred_at, id) with optional filters (index audit_events_page_idx).
    return this.dataSource.query(
      `SELECT id, workspace_id, actor_user_id, actor_email, action, target, detail, occurred_at FROM audit_events
       WHERE ${where.join(' AND ')} ORDER BY occurred_at DESC, id DESC LIMIT $${values.length}`,
      values,
    );
  }

  /** Up to TRAIL_BATCH rows with seq in (after, to], in seq order. */
  trailBatch(workspaceId: string, after: number, to: number): Promise<StoredAuditRow[]> {
    return namedQuery<StoredAuditRow>(this.dataSource, TRAIL_ROWS, [workspaceId, after, to]);
  }

  /** The link of the row at `seq`; undefined when no such row is stored. */
  async chainHashAt(workspaceId: string, seq: number): Promise<string | undefined> {
    const row = await this.dataSource.manager.findOne(AuditEvent, { select: { id: true, chainHash: true }, where: { workspaceId, seq: String(seq) } });
    return row?.chainHash;
  }
}
