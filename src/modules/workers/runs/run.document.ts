import { Schema, closedObject, id, nullableText, nullableTimestamp, timestamp } from 'src/common/http/document-schema';
import { formatTime, formatTimeRequired } from 'src/common/time/time';
import { WorkerRun } from 'src/modules/workers/entities/worker-run.entity';
import { RUN_STATES } from 'src/modules/workers/runs/dto/runs.dto';
import { REFUSAL_FIELDS, REFUSAL_REQUIRED } from 'src/modules/workers/runs/refusals';
import { environmentClasses, prefixed, version } from 'src/modules/workers/shared.responses';

/** One field of the run document: its schema and its value, read from the `worker_runs` row. */
interface Field {
  schema: Schema;
  value(row: WorkerRun): unknown;
}

/** The unexpired control lease, or null. */
const leaseOf = (row: WorkerRun) =>
  row.controlLeaseId && row.controlLeaseExpiresAt && row.controlLeaseExpiresAt > new Date()
    ? { lease_id: row.controlLeaseId, holder_user_id: row.controlLeaseHolder, expires_at: formatTimeRequired(row.controlLeaseExpiresAt) }
    : null;

/**
 * The run document, field by field: the schema the OpenAPI document shows and the value the
 * mapper writes sit on one line, so a new field is added here (and to the entity) and nowhere else.
 */
const RUN_FIELDS: Record<string, Field> = {
  schema_version: { schema: version, value: () => 1 },
  run_id: { schema: prefixed('run'), value: (r) => r.id },
  workspace_id: { schema: id, value: (r) => r.workspaceId },
  kind: { schema: { enum: ['run', 'demo'] }, value: (r) => r.kind },
  worker_id: { schema: nullableText, value: (r) => r.workerId },
  revision_id: { schema: nullableText, value: (r) => r.revisionId },
  template_id: { schema: nullableText, value: (r) => r.templateId },
  status: { schema: { enum: [...RUN_STATES] }, value: (r) => r.status },
  environment_classes: { schema: environmentClasses, value: (r) => r.environmentClasses },
  session_profile_id: { schema: nullableText, value: (r) => r.sessionProfileId },
  failure: {
    schema: {
      type: ['object', 'null'],
      description: 'The refusal a failed hand-off recorded; null otherwise.',
      properties: { ...REFUSAL_FIELDS, occurred_at: timestamp },
      required: [...REFUSAL_REQUIRED, 'occurred_at'],
      additionalProperties: false,
    },
    value: (r) => r.failure,
  },
  control_lease: {
    schema: {
      type: ['object', 'null'],
      description: 'The unexpired control lease; null when none is held.',
      properties: { lease_id: prefixed('lse'), holder_user_id: id, expires_at: timestamp },
      required: ['lease_id', 'holder_user_id', 'expires_at'],
      additionalProperties: false,
    },
    value: leaseOf,
  },
  created_by: { schema: closedObject({ kind: { const: 'operator' }, id }), value: (r) => ({ kind: 'operator', id: r.createdByUserId }) },
  created_at: { schema: timestamp, value: (r) => formatTimeRequired(r.createdAt) },
  updated_at: { schema: timestamp, value: (r) => formatTimeRequired(r.updatedAt) },
  ended_at: { schema: nullableTimestamp, value: (r) => formatTime(r.endedAt) },
};

const FIELDS = Object.entries(RUN_FIELDS);

/** A run or demo run. */
export const RUN_SCHEMA: Schema = closedObject(Object.fromEntries(FIELDS.map(([name, field]) => [name, field.schema])));

export const toRunDocument = (row: WorkerRun): Record<string, unknown> => Object.fromEntries(FIELDS.map(([name, field]) => [name, field.value(row)]));
