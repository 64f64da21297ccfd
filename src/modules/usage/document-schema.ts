import { closedObject, Schema } from 'src/common/http/document-schema';
import { TOTALS_FIELDS } from 'src/modules/usage/usage-vocabulary';

const counter: Schema = { type: 'integer', minimum: 0 };
const timestamp: Schema = { type: 'string', format: 'date-time' };
const totals = closedObject(Object.fromEntries(TOTALS_FIELDS.map((f) => [f, counter])));

/** The published schema of the usage summary (docs/read-models.md). */
export const USAGE_SUMMARY_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  workspace_id: { type: 'string' },
  window: closedObject({ from: timestamp, to: timestamp }),
  group_by: { enum: ['kind', 'key', 'model', 'provider', 'tool'] },
  totals,
  groups: { type: 'array', items: closedObject({ value: { type: ['string', 'null'] }, totals }) },
  budgets: {
    type: 'array',
    items: closedObject({
      key_id: { type: 'string' },
      period: closedObject({ from: timestamp, to: timestamp }),
      cap_usd_micros: counter,
      spent_usd_micros: counter,
      remaining_usd_micros: counter,
    }),
  },
  freshness_at: { type: ['string', 'null'], format: 'date-time' },
  completeness: { enum: ['complete', 'gap_detected'] },
  next_cursor: { type: ['string', 'null'] },
});
