import { ServiceError } from 'src/common/http/errors';
import { toPublication } from 'src/modules/publication/publication.service';
import { RouteQualifier } from 'src/modules/routing/entities/route-qualifier.entity';

export const QUALIFIER_ID = /^[a-z0-9_-]{1,128}$/;

export type Constraint = { kind: 'none' } | { kind: 'only'; targets: string[] } | { kind: 'ignore'; targets: string[] } | { kind: 'pin'; target: string };

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
export function constraintOf(row: RouteQualifier): Constraint {
  const active = [row.onlyTargets, row.ignoreTargets, row.pinTarget].filter((c) => c !== null);
  if (active.length > 1) throw new QualifierPayloadInvalidError(row.qualifierId);
  if (row.onlyTargets !== null) {
    if (!isTargets(row.onlyTargets)) throw new QualifierPayloadInvalidError(row.qualifierId);
    return { kind: 'only', targets: row.onlyTargets };
  }
  if (row.ignoreTargets !== null) {
    if (!isTargets(row.ignoreTargets)) throw new QualifierPayloadInvalidError(row.qualifierId);
    return { kind: 'ignore', targets: row.ignoreTargets };
  }
  if (row.pinTarget !== null) return { kind: 'pin', target: row.pinTarget };
  return { kind: 'none' };
}

/** The routing fields shared by the operator document and the published payload. */
function body(row: RouteQualifier) {
  return {
    qualifier_id: row.qualifierId,
    revision: row.revision,
    ...(row.capabilityId === null ? {} : { capability_id: row.capabilityId }),
    constraint: constraintOf(row),
    prefer_auth: row.preferAuth,
    prefer_surface: row.preferSurface,
    prefer_sources: row.preferSources,
    min_quality: row.minQuality,
  };
}

export interface Versions {
  snapshot_version: number;
  published_version: number;
}

/** The `operator_route_qualifier` document. */
export function toQualifierDocument(row: RouteQualifier, versions: Versions) {
  return {
    schema_version: 1,
    workspace_id: row.workspaceId,
    ...body(row),
    max_cost_micros_usd: row.maxCost === null ? null : Number(row.maxCost),
    allow_fallbacks: row.allowFallbacks,
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
export function toPublishedQualifier(row: RouteQualifier) {
  return { ...body(row), max_cost: row.maxCost === null ? null : Number(row.maxCost), allow_fallbacks: row.allowFallbacks };
}
