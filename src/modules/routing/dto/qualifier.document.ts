import { ServiceError } from 'src/common/http/errors';
import { toPublication } from 'src/modules/publication/publication.service';

export const QUALIFIER_ID = /^[a-z0-9_-]{1,128}$/;

export type Constraint = { kind: 'none' } | { kind: 'only'; targets: string[] } | { kind: 'ignore'; targets: string[] } | { kind: 'pin'; target: string };

export interface QualifierRow {
  workspace_id: string;
  qualifier_id: string;
  revision: number;
  capability_id: string | null;
  only_targets: unknown;
  ignore_targets: unknown;
  pin_target: string | null;
  prefer_auth: string[];
  prefer_surface: string[];
  prefer_sources: string[];
  min_quality: number;
  /** bigint, as text. */
  max_cost: string | null;
  allow_fallbacks: boolean;
}

export const QUALIFIER_COLUMNS = `workspace_id, qualifier_id, revision, capability_id, only_targets, ignore_targets, pin_target,
  prefer_auth, prefer_surface, prefer_sources, min_quality, max_cost, allow_fallbacks`;

/**
 * A stored qualifier that cannot be read back (more than one active constraint, or a malformed
 * one): 500 `route_qualifier_payload_invalid`, naming the qualifier when its id is a safe slug.
 */
export class QualifierPayloadInvalidError extends ServiceError {
  constructor(private readonly qualifierId: string) {
    super(500, 'route_qualifier_payload_invalid', 'stored route qualifier is invalid');
  }

  override getResponse(): object {
    const error: Record<string, string> = { code: 'route_qualifier_payload_invalid', message: 'stored route qualifier is invalid' };
    if (QUALIFIER_ID.test(this.qualifierId)) error.qualifier_id = this.qualifierId;
    return { error };
  }
}

const isTargets = (value: unknown): value is string[] => Array.isArray(value) && value.every((t) => typeof t === 'string');

/** The constraint the row's three columns describe; throws when more than one is active. */
export function constraintOf(row: QualifierRow): Constraint {
  const active = [row.only_targets, row.ignore_targets, row.pin_target].filter((c) => c !== null);
  if (active.length > 1) throw new QualifierPayloadInvalidError(row.qualifier_id);
  if (row.only_targets !== null) {
    if (!isTargets(row.only_targets)) throw new QualifierPayloadInvalidError(row.qualifier_id);
    return { kind: 'only', targets: row.only_targets };
  }
  if (row.ignore_targets !== null) {
    if (!isTargets(row.ignore_targets)) throw new QualifierPayloadInvalidError(row.qualifier_id);
    return { kind: 'ignore', targets: row.ignore_targets };
  }
  if (row.pin_target !== null) return { kind: 'pin', target: row.pin_target };
  return { kind: 'none' };
}

/** The routing fields shared by the operator document and the published payload. */
function body(row: QualifierRow) {
  return {
    qualifier_id: row.qualifier_id,
    revision: row.revision,
    ...(row.capability_id === null ? {} : { capability_id: row.capability_id }),
    constraint: constraintOf(row),
    prefer_auth: row.prefer_auth,
    prefer_surface: row.prefer_surface,
    prefer_sources: row.prefer_sources,
    min_quality: row.min_quality,
  };
}

export interface Versions {
  snapshot_version: number;
  published_version: number;
}

/** The `operator_route_qualifier` document. */
export function toQualifierDocument(row: QualifierRow, versions: Versions) {
  return {
    schema_version: 1,
    workspace_id: row.workspace_id,
    ...body(row),
    max_cost_micros_usd: row.max_cost === null ? null : Number(row.max_cost),
    allow_fallbacks: row.allow_fallbacks,
    deleted: false,
    publication: toPublication(versions.snapshot_version, versions.published_version),
  };
}

/** The delete answer: the tombstone only, with the revision held at removal. */
export function toTombstone(workspaceId: string, qualifierId: string, revision: number, versions: Versions) {
  return {
    schema_version: 1,
    workspace_id: workspaceId,
    qualifier_id: qualifierId,
    revision,
    deleted: true,
    publication: toPublication(versions.snapshot_version, versions.published_version),
  };
}

/** One entry of the snapshot's `route_qualifiers`. */
export function toPublishedQualifier(row: QualifierRow) {
  return { ...body(row), max_cost: row.max_cost === null ? null : Number(row.max_cost), allow_fallbacks: row.allow_fallbacks };
}
