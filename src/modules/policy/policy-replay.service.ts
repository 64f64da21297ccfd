import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { WorkspaceContext } from 'src/platform/access/context';
import { bodyError, notFound } from 'src/common/http/errors';
import { formatTimeRequired, requestWindow, TimeWindow } from 'src/common/time/time';
import { SourcePositions } from 'src/modules/policy/diagnostics';
import { DEFAULT_POLICY, draftHash, PolicyState } from 'src/modules/policy/dto/policy.document';
import { DEFAULT_REPLAY_LIMIT, ExplainPolicyDto, ReplayPolicyDto } from 'src/modules/policy/dto/policy.dto';
import { AuthorizationRequest, Evaluation, pagesOf } from 'src/modules/policy/policy.compiler';
import { PolicyStatement, splitPolicies } from 'src/modules/policy/policy-source';
import { PolicyService } from 'src/modules/policy/policy.service';
import { MAX_CHANGE_GROUPS } from 'src/modules/policy/policy.responses';
import { diffBudget, unifiedDiff } from 'src/modules/policy/text-diff';
import { RECEIPT_NOT_FOUND } from 'src/modules/receipts/receipts.service';
import { isJsonObject } from 'src/common/json/json';
import { allowLongerStatements } from 'src/database/bounded-driver';

const REVISION_NOT_FOUND = 'policy revision not found';
/** The replay window when the body names none: the last 7 days. */
const DEFAULT_WINDOW_MS = 7 * 24 * 3600 * 1000;

/** Recorded decisions read and evaluated at a time: a replay holds one page (and the next, read meanwhile), whatever its limit. */
export const REPLAY_PAGE = 5000;

/**
 * The statement bound of one page's read, above DATABASE_STATEMENT_TIMEOUT_MS: about 1 s for a full
 * page on analyzed tables, 9 s when PostgreSQL planned it on stale statistics (docs/decisions.md).
 */
export const REPLAY_PAGE_TIMEOUT_MS = 30_000;

/**
 * The newest revision of `outer`'s invocation that carries an authorization request (null when none
 * does): a backward primary-key probe per row, whatever the planner's statistics. Written as a
 * NOT EXISTS, the anti-join was planned on statistics older than a burst of ingestion as a rescan
 * of the workspace's requests for every row (8.3 s for 5,500 receipts recorded at once, 44 ms now).
 */
const newestRequestOf = (outer: string) =>
  `(SELECT n.receipt_revision FROM receipt_revisions n WHERE n.workspace_id = ${outer}.workspace_id AND n.invocation_id = ${outer}.invocation_id
    AND n.envelope ? 'authorization' ORDER BY n.receipt_revision DESC LIMIT 1)`;

/**
 * A page of each invocation's newest revision carrying an authorization request in the window,
 * newest first, before the position ($3, $4) (the window's end and '' for the first page; the last
 * row of the page before for the next). The partial index `receipt_revisions_authorization_idx`
 * walks only those rows.
 */
const RECORDED = `
  SELECT r.receipt_id, r.key_id, r.tool, r.occurred_at, r.envelope->'authorization' AS authorization
  FROM receipt_revisions r
  WHERE r.workspace_id = $1 AND r.occurred_at >= $2 AND r.occurred_at <= $3 AND (r.occurred_at < $3 OR r.receipt_id < $4) AND r.envelope ? 'authorization'
    AND r.receipt_revision = ${newestRequestOf('r')}
  ORDER BY r.occurred_at DESC, r.receipt_id DESC
  LIMIT $5`;

/**
 * Of the newest $4 receipts (invocations) in `[from, to)`, those none of whose revisions carries an
 * authorization request: at most $4 (the replay's `limit`) heads are probed, walked newest first on
 * `receipt_heads_list_idx`, however wide the window (a `from` in the year 0001 included).
 */
const NOT_REPLAYABLE = `
  SELECT count(*)::int AS n FROM (
    SELECT h.workspace_id, h.invocation_id FROM receipt_heads h
    WHERE h.workspace_id = $1 AND h.occurred_at >= $2 AND h.occurred_at < $3
    ORDER BY h.occurred_at DESC, h.receipt_id DESC LIMIT $4
  ) h WHERE ${newestRequestOf('h')} IS NULL`;

interface RecordedRow {
  receipt_id: string;
  key_id: string | null;
  tool: string | null;
  occurred_at: Date;
  authorization: unknown;
}

/** `envelope.authorization` of a receipt revision (CONTRACT.md 4.4) once its shape is checked. */
interface RecordedAuthorization extends AuthorizationRequest {
  decision: 'allow' | 'deny';
}

const isUid = (v: unknown): v is { type: string; id: string } => isJsonObject(v) && typeof v.type === 'string' && typeof v.id === 'string';

/** The recorded request, or null when it is not one (counted as not replayable, never guessed). */
function recordedAuthorization(value: unknown): RecordedAuthorization | null {
  if (!isJsonObject(value)) return null;
  const { principal, action, resource, context, entities, decision } = value;
  if (!isUid(principal) || !isUid(action) || !isUid(resource) || !isJsonObject(context) || !Array.isArray(entities)) return null;
  if (decision !== 'allow' && decision !== 'deny') return null;
  return { principal, action, resource, context, entities, decision };
}

/** A policy source to evaluate or compare: where it came from and its text. */
interface PolicySide {
  ref: string;
  revision_id: string | null;
  draft_hash: string;
  cedarText: string;
}

interface ChangeGroup {
  action: string;
  resource: { type: string; id: string };
  principal_type: string;
  count: number;
  example: {
    receipt_id: string;
    key_id: string | null;
    tool: string | null;
    model: string | null;
    recorded_decision: 'allow' | 'deny';
    replayed_decision: 'allow' | 'deny';
    determining_policies: string[];
  };
}

/** Cedar's positional ids (`policy3`) to the ids the operator wrote (`@id`) or the positional one. */
function policyIds(statements: PolicyStatement[]): Map<string, PolicyStatement> {
  return new Map(statements.map((s) => [s.cedarId, s]));
}

/**
 * What a policy change will do before it is live: replay recorded decisions against a draft,
 * explain one decision, diff two revisions. All three only read (no audit row: nothing changes).
 */
@Injectable()
export class PolicyReplayService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly policy: PolicyService,
  ) {}

  async replay(ws: WorkspaceContext, body: ReplayPolicyDto) {
    const window = replayWindow(body.from, body.to);
    const limit = body.limit ?? DEFAULT_REPLAY_LIMIT;
    const state = await this.policy.readState(this.dataSource.manager, ws);
    const source = body.cedar_text ?? state.cedarText;
    const hash = draftHash(source);
    await this.policy.requireCompiled({ ...state, cedarText: source, draftHash: hash });

    let read = 0;
    let oldest = window.from;
    let malformed = 0;
    let page: { row: RecordedRow; auth: RecordedAuthorization }[] = [];
    const readPage = (at: Date, id: string): Promise<RecordedRow[]> => {
      const rows = this.dataSource.transaction(async (manager): Promise<RecordedRow[]> => {
        await allowLongerStatements(manager.queryRunner!, REPLAY_PAGE_TIMEOUT_MS, 'transaction');
        return manager.query(RECORDED, [ws.id, window.from, at, id, Math.min(REPLAY_PAGE, limit - read)]);
      });
      rows.catch(() => undefined); // awaited by nextPage unless the evaluation failed first
      return rows;
    };
    // Pages of the newest `limit` recorded decisions, each read while the one before is evaluated.
    let next: Promise<RecordedRow[]> | null = readPage(window.to, '');
    const nextPage = async (): Promise<AuthorizationRequest[] | null> => {
      if (next === null) return null;
      const found = await next;
      read += found.length;
      const last = found[found.length - 1];
      // A short page (the window exhausted, or the limit's last) is the final one.
      next = found.length === REPLAY_PAGE && read < limit ? readPage(last.occurred_at, last.receipt_id) : null;
      if (last) oldest = last.occurred_at;
      page = [];
      for (const row of found) {
        const auth = recordedAuthorization(row.authorization);
        if (auth) page.push({ row, auth });
        else malformed++;
      }
      return page.map((r) => r.auth);
    };

    const ids = policyIds(splitPolicies(source));
    let evaluated = 0;
    let unchanged = 0;
    let errors = 0;
    const flips = { allow_to_deny: 0, deny_to_allow: 0 };
    const groups = new Map<string, ChangeGroup>();
    const tally = ({ row, auth }: { row: RecordedRow; auth: RecordedAuthorization }, result: Evaluation) => {
      evaluated++;
      if ('refused' in result) {
        errors++;
        return;
      }
      if (result.errors.length > 0) errors++;
      if (result.decision === auth.decision) {
        unchanged++;
        return;
      }
      flips[auth.decision === 'allow' ? 'allow_to_deny' : 'deny_to_allow']++;
      const key = JSON.stringify([auth.action.id, auth.resource.type, auth.resource.id, auth.principal.type]);
      const group = groups.get(key);
      if (group) {
        group.count++;
        return;
      }
      groups.set(key, {
        action: auth.action.id,
        resource: { type: auth.resource.type, id: auth.resource.id },
        principal_type: auth.principal.type,
        count: 1,
        example: {
          receipt_id: row.receipt_id,
          key_id: row.key_id,
          tool: row.tool,
          model: auth.resource.type === 'Gateway::Model' ? auth.resource.id : null,
          recorded_decision: auth.decision,
          replayed_decision: result.decision,
          determining_policies: result.reasons.map((r) => ids.get(r)?.id ?? r),
        },
      });
    };
    await this.policy.evaluate(ws, hash, source, nextPage, (results) => page.forEach((recorded, i) => tally(recorded, results[i])));
    // With the limit reached, the replay covers the window from its oldest decision on; not-replayable receipts are counted over that span, among its newest `limit`.
    const [{ n: unrecorded }]: { n: number }[] = await this.dataSource.query(NOT_REPLAYABLE, [ws.id, read === limit ? oldest : window.from, window.to, limit]);
    // Most flips first, then by the group's key (action, resource, principal type).
    const changes = [...groups]
      .sort(([ka, a], [kb, b]) => b.count - a.count || ka.localeCompare(kb))
      .slice(0, MAX_CHANGE_GROUPS)
      .map(([, group]) => group);
    return {
      draft_hash: hash,
      window: { from: formatTimeRequired(window.from), to: formatTimeRequired(window.to) },
      evaluated,
      unchanged,
      flips,
      not_replayable: unrecorded + malformed,
      errors,
      changes,
    };
  }

  async explain(ws: WorkspaceContext, body: ExplainPolicyDto) {
    const request = body.receipt_id !== undefined ? await this.receiptRequest(ws.id, body) : explicitRequest(body);
    let side: PolicySide;
    if (body.against === 'draft') {
      // The draft may not compile (422, as publish answers); a published revision compiled when it was published.
      const state = await this.policy.readState(this.dataSource.manager, ws);
      await this.policy.requireCompiled(state);
      side = draftSide(state);
    } else {
      side = await this.side(ws, 'published');
    }
    let result!: Evaluation;
    await this.policy.evaluate(ws, side.draft_hash, side.cedarText, pagesOf([request]), ([answer]) => (result = answer));
    if ('refused' in result) throw bodyError([], 'the authorization request could not be evaluated');
    const ids = policyIds(splitPolicies(side.cedarText));
    const positions = new SourcePositions(side.cedarText);
    return {
      against: body.against,
      revision_id: side.revision_id,
      draft_hash: side.draft_hash,
      decision: result.decision,
      determining_policies: result.reasons.map((cedarId) => {
        const statement = ids.get(cedarId);
        return { id: statement?.id ?? cedarId, line: statement?.line ?? null, column: statement?.column ?? null };
      }),
      errors: result.errors.map((e) => ({
        policy_id: ids.get(e.policy)?.id ?? e.policy,
        message: e.message,
        ...(e.at !== null ? positions.at(e.at) : { line: null, column: null }),
      })),
    };
  }

  async diff(ws: WorkspaceContext, from: string, to: string) {
    const [before, after] = await Promise.all([this.side(ws, from), this.side(ws, to)]);
    const old = new Map(splitPolicies(before.cedarText).map((s) => [s.id, s]));
    const added: { id: string; text: string }[] = [];
    const changed: { id: string; diff: string }[] = [];
    let unchanged = 0;
    const budget = diffBudget();
    for (const statement of splitPolicies(after.cedarText)) {
      const previous = old.get(statement.id);
      old.delete(statement.id);
      if (!previous) added.push({ id: statement.id, text: statement.text });
      else if (previous.text === statement.text) unchanged++;
      else changed.push({ id: statement.id, diff: unifiedDiff(previous.text, statement.text, budget) });
    }
    const removed = [...old.values()].map((s) => ({ id: s.id, text: s.text }));
    const describe = (s: PolicySide) => ({ ref: s.ref, revision_id: s.revision_id, draft_hash: s.draft_hash });
    return { from: describe(before), to: describe(after), added, removed, changed, unchanged };
  }

  /** The source `ref` names: the stored draft, the published revision (the default policy when none), or a revision of this workspace. */
  private async side(ws: WorkspaceContext, ref: string): Promise<PolicySide> {
    if (ref === 'draft') return draftSide(await this.policy.readState(this.dataSource.manager, ws));
    const row: { id: string; cedar_text: string; draft_hash: string } | undefined =
      ref === 'published'
        ? await this.policy.currentRevision(this.dataSource.manager, ws.id)
        : (await this.dataSource.query(`SELECT id, cedar_text, draft_hash FROM policy_revisions WHERE workspace_id = $1 AND id = $2`, [ws.id, ref]))[0];
    if (row) return { ref, revision_id: row.id, draft_hash: row.draft_hash, cedarText: row.cedar_text };
    if (ref === 'published') return { ref, revision_id: null, draft_hash: draftHash(DEFAULT_POLICY), cedarText: DEFAULT_POLICY };
    throw notFound(REVISION_NOT_FOUND);
  }

  /** The request recorded on a receipt of this workspace (any of its revisions, by receipt id). */
  private async receiptRequest(workspaceId: string, body: ExplainPolicyDto): Promise<AuthorizationRequest> {
    if (body.principal || body.action || body.resource || body.context || body.entities) {
      throw bodyError(['receipt_id'], 'provide either receipt_id or a request, not both');
    }
    const rows: { authorization: unknown }[] = await this.dataSource.query(
      `SELECT envelope->'authorization' AS authorization FROM receipt_revisions WHERE workspace_id = $1 AND receipt_id = $2 LIMIT 1`,
      [workspaceId, body.receipt_id],
    );
    if (!rows[0]) throw notFound(RECEIPT_NOT_FOUND);
    const auth = recordedAuthorization(rows[0].authorization);
    if (!auth) throw bodyError(['receipt_id'], 'receipt carries no authorization request');
    return auth;
  }
}

const draftSide = (state: PolicyState): PolicySide => ({ ref: 'draft', revision_id: null, draft_hash: state.draftHash, cedarText: state.cedarText });

/** The request spelled out in the body: principal, action, resource and context are all needed. */
function explicitRequest(body: ExplainPolicyDto): AuthorizationRequest {
  for (const field of ['principal', 'action', 'resource', 'context'] as const) {
    if (body[field] === undefined) throw bodyError([field], 'field required', 'missing');
  }
  return { principal: body.principal!, action: body.action!, resource: body.resource!, context: body.context!, entities: body.entities ?? [] };
}

/** The body's half-open window (both or neither), or the last 7 days. */
function replayWindow(from: string | undefined, to: string | undefined): TimeWindow {
  const window = requestWindow(from, to, (field, msg) => bodyError([field], msg));
  if (window) return window;
  const now = Date.now();
  return { from: new Date(now - DEFAULT_WINDOW_MS), to: new Date(now) };
}
