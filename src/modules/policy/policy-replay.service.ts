import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { bodyError } from 'src/common/http/errors';
import { formatTimeRequired, requestWindow, TimeWindow } from 'src/common/time/time';
import { Transactions } from 'src/database/transactions';
import { draftHash } from 'src/modules/policy/dto/policy.document';
import { DEFAULT_REPLAY_LIMIT, ReplayPolicyDto } from 'src/modules/policy/dto/policy.dto';
import { AuthorizationRequest, Evaluation } from 'src/modules/policy/policy.compiler';
import { splitPolicies } from 'src/modules/policy/policy-source';
import { PolicyService } from 'src/modules/policy/policy.service';
import { MAX_CHANGE_GROUPS } from 'src/modules/policy/policy.responses';
import { policyIds, RecordedAuthorization, recordedAuthorization } from 'src/modules/policy/recorded-authorization';
import { ReceiptReadsRepository, RecordedDecisionRow } from 'src/modules/receipts/receipt-reads.repository';

/** The replay window when the body names none: the last 7 days. */
const DEFAULT_WINDOW_MS = 7 * 24 * 3600 * 1000;

/** Recorded decisions read and evaluated at a time: a replay holds one page (and the next, read meanwhile), whatever its limit. */
export const REPLAY_PAGE = 5000;

/**
 * The statement bound of one page's read, above DATABASE_STATEMENT_TIMEOUT_MS: about 1 s for a full
 * page on analyzed tables, 9 s when PostgreSQL planned it on stale statistics (docs/decisions.md).
 */
export const REPLAY_PAGE_TIMEOUT_MS = 30_000;

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

/**
 * What a policy change will do before it is live: replays the recorded decisions of a window
 * against a draft and counts what would flip. Only reads (no audit row: nothing changes).
 */
@Injectable()
export class PolicyReplayService {
  constructor(
    private readonly transactions: Transactions,
    private readonly policy: PolicyService,
    private readonly receipts: ReceiptReadsRepository,
  ) {}

  async replay(ws: WorkspaceContext, body: ReplayPolicyDto) {
    const window = replayWindow(body.from, body.to);
    const limit = body.limit ?? DEFAULT_REPLAY_LIMIT;
    const state = await this.policy.readState(undefined, ws);
    const source = body.cedar_text ?? state.cedarText;
    const hash = draftHash(source);
    await this.policy.requireCompiled({ ...state, cedarText: source, draftHash: hash });

    let read = 0;
    let oldest = window.from;
    let malformed = 0;
    let page: { row: RecordedDecisionRow; auth: RecordedAuthorization }[] = [];
    const readPage = (at: Date, id: string): Promise<RecordedDecisionRow[]> => {
      const rows = this.transactions.run((tx) =>
        this.receipts.recordedDecisions(
          tx.manager,
          { workspaceId: ws.id, from: window.from, at, id, limit: Math.min(REPLAY_PAGE, limit - read) },
          REPLAY_PAGE_TIMEOUT_MS,
        ),
      );
      rows.catch(() => undefined); // awaited by nextPage unless the evaluation failed first
      return rows;
    };
    // Pages of the newest `limit` recorded decisions, each read while the one before is evaluated.
    let next: Promise<RecordedDecisionRow[]> | null = readPage(window.to, '');
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
    const tally = ({ row, auth }: { row: RecordedDecisionRow; auth: RecordedAuthorization }, result: Evaluation) => {
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
    const unrecorded = await this.receipts.countWithoutRequest(ws.id, read === limit ? oldest : window.from, window.to, limit);
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
}

/** The body's half-open window (both or neither), or the last 7 days. */
function replayWindow(from: string | undefined, to: string | undefined): TimeWindow {
  const window = requestWindow(from, to, (field, msg) => bodyError([field], msg));
  if (window) return window;
  const now = Date.now();
  return { from: new Date(now - DEFAULT_WINDOW_MS), to: new Date(now) };
}
