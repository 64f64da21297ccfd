import { formatTime } from 'src/common/time/time';
import { toPublication } from 'src/modules/publication/publication.service';

export interface Price {
  model: string;
  input_micros_usd_per_mtok: number;
  output_micros_usd_per_mtok: number;
  cached_micros_usd_per_mtok: number;
  reasoning_micros_usd_per_mtok: number;
}

/** The stored pricebook with the workspace's publication counters (no pricebook row: revision 0). */
export interface PricingRow {
  revision: number | null;
  prices: Price[] | null;
  updated_at: Date | null;
  snapshot_version: number;
  published_version: number;
}

export function toPricingDocument(workspaceId: string, row: PricingRow) {
  return {
    schema_version: 1,
    workspace_id: workspaceId,
    revision: row.revision ?? 0,
    prices: row.prices ?? [],
    updated_at: formatTime(row.updated_at),
    publication: toPublication(row.snapshot_version, row.published_version),
  };
}

/** The snapshot's `pricebook`: prices keyed by model name or pattern, for the gateway's lookups. */
export function toPricebookPart(revision: number, prices: Price[]) {
  return {
    revision,
    models: Object.fromEntries(prices.map(({ model, ...price }) => [model, price])),
  };
}
