import { formatTimeRequired } from 'src/common/time/time';
import type { RouteDecisionRow } from 'src/modules/receipts/receipt-reads.repository';

/** Exclusions carried per decision, at most. */
export const MAX_EXCLUDED = 8;

/** A receipt head carrying a route, with its recorded envelope's `route` object (read through receipts' exported reads). */
export type DecisionRow = RouteDecisionRow;

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const int = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) ? v : null);

function exclusions(value: unknown) {
  if (!Array.isArray(value)) return [];
  return value
    .filter((e): e is Record<string, unknown> => e !== null && typeof e === 'object' && !Array.isArray(e))
    .slice(0, MAX_EXCLUDED)
    .map((e) => ({ target: str(e.target), binding_id: str(e.binding_id), reason: str(e.reason) }));
}

/**
 * The route decision of one receipt: route fields from the envelope's `route` object (a field
 * the gateway did not record, or recorded with the wrong type, is null), outcome fields from the
 * receipt itself. `excluded_count` is the recorded total, which may exceed the 8 listed.
 */
export function toRouteDecision(row: DecisionRow) {
  const r = row.route;
  const excluded = exclusions(r.excluded);
  return {
    receipt_id: row.receipt_id,
    occurred_at: formatTimeRequired(row.occurred_at),
    capability: str(r.capability),
    selected: str(r.selected),
    binding_id: str(r.binding_id),
    reason: str(r.reason),
    surface: str(r.surface),
    catalog_source: str(r.catalog_source),
    evidence_floor: str(r.evidence_floor),
    evidence_ceiling: str(r.evidence_ceiling),
    evidence_trust: row.evidence_trust,
    state: row.state,
    decision: row.decision,
    eligible_count: int(r.eligible_count),
    excluded_count: int(r.excluded_count) ?? excluded.length,
    excluded,
    algorithm_version: int(r.algorithm_version) ?? str(r.algorithm_version),
    snapshot_version: int(r.snapshot_version),
  };
}
