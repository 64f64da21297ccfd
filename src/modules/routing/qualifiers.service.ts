import { Injectable, OnModuleInit } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { badRequest, conflict, FieldError, FieldValidationError, notFound } from 'src/common/http/errors';
import { AuditService } from 'src/modules/audit/audit.service';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotRegistry, SnapshotUnavailableError } from 'src/modules/publication/snapshot.registry';
import { QUALIFIER_ID, QualifierPayloadInvalidError, toPublishedQualifier, toQualifierDocument, toTombstone } from 'src/modules/routing/dto/qualifier.document';
import { UpsertQualifierDto } from 'src/modules/routing/dto/qualifier.dto';
import { RouteQualifier } from 'src/modules/routing/entities/route-qualifier.entity';
import { QualifiersRepository } from 'src/modules/routing/qualifiers.repository';

/** Qualifiers a workspace may hold. */
export const MAX_QUALIFIERS = 32;
export const MAX_TARGETS = 32;
export const MAX_TARGET_LENGTH = 256;
export const MAX_CAPABILITY_ID = 256;
export const CAPABILITY_PREFIX = 'capability_id must use the cap prefix';
export const REVISION_CONFLICT = 'route_qualifier_revision_conflict';

const LINE_TERMINATOR = /[\n\r\u000b\u000c\u0085\u2028\u2029]/u;

/** `cap.` plus a non-empty tool segment, no line terminators (the length is checked separately). */
export function isCapabilityId(value: string): boolean {
  return value.startsWith('cap.') && value.length > 4 && !LINE_TERMINATOR.test(value);
}

const codePoints = (value: string) => [...value].length;

interface ConstraintColumns {
  only_targets: string[] | null;
  ignore_targets: string[] | null;
  pin_target: string | null;
}

const KEYS: Record<string, string[]> = { none: ['kind'], only: ['kind', 'targets'], ignore: ['kind', 'targets'], pin: ['kind', 'target'] };

function target(value: unknown, loc: (string | number)[], errors: FieldError[]): string {
  if (value === undefined) errors.push({ loc, msg: 'field required', type: 'missing' });
  else if (typeof value !== 'string') errors.push({ loc, msg: 'target must be a string', type: 'string_type' });
  else if (value.length === 0) errors.push({ loc, msg: 'target must be at least 1 character', type: 'string_too_short' });
  else if (codePoints(value) > MAX_TARGET_LENGTH) errors.push({ loc, msg: `target must be at most ${MAX_TARGET_LENGTH} characters`, type: 'string_too_long' });
  return value as string;
}

/** The tagged `constraint` object as storage columns, or 422 field errors. Absent or null is `{kind: none}`. */
export function parseConstraint(value: Record<string, unknown> | null | undefined): ConstraintColumns {
  const none = { only_targets: null, ignore_targets: null, pin_target: null };
  if (value === undefined || value === null) return none;
  const errors: FieldError[] = [];
  const at = (...loc: (string | number)[]) => ['body', 'constraint', ...loc];
  const kind = value.kind;
  if (typeof kind !== 'string' || !(kind in KEYS)) {
    errors.push(kind === undefined ? { loc: at('kind'), msg: 'field required', type: 'missing' } : { loc: at('kind'), msg: 'kind must be one of none, only, ignore, pin', type: 'enum' });
    throw new FieldValidationError(errors);
  }
  for (const key of Object.keys(value)) if (!KEYS[kind].includes(key)) errors.push({ loc: at(key), msg: 'extra fields not permitted', type: 'extra_forbidden' });
  let targets: string[] = [];
  if (kind === 'only' || kind === 'ignore') {
    const list = value.targets;
    if (list === undefined) errors.push({ loc: at('targets'), msg: 'field required', type: 'missing' });
    else if (!Array.isArray(list)) errors.push({ loc: at('targets'), msg: 'targets must be a list', type: 'list_type' });
    else if (list.length > MAX_TARGETS) errors.push({ loc: at('targets'), msg: `targets must contain at most ${MAX_TARGETS} entries`, type: 'too_long' });
    else targets = list.map((t: unknown, i: number) => target(t, at('targets', i), errors));
  }
  const pin = kind === 'pin' ? target(value.target, at('target'), errors) : null;
  if (errors.length > 0) throw new FieldValidationError(errors);
  return { only_targets: kind === 'only' ? targets : null, ignore_targets: kind === 'ignore' ? targets : null, pin_target: pin };
}

/**
 * Route qualifiers: operator routing rules the gateway applies when it selects a route. Stored
 * per workspace (at most 32), revisioned for optimistic concurrency, published in the snapshot as
 * `route_qualifiers`. Every write runs under the workspace lock.
 */
@Injectable()
export class QualifiersService implements OnModuleInit {
  constructor(
    private readonly qualifiers: QualifiersRepository,
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly publications: PublicationService,
    private readonly snapshots: SnapshotRegistry,
  ) {}

  onModuleInit(): void {
    this.snapshots.register('route_qualifiers', async (manager, ws) => {
      try {
        return (await this.qualifiers.list(manager, ws.id)).map(toPublishedQualifier);
      } catch (error) {
        if (error instanceof QualifierPayloadInvalidError) throw new SnapshotUnavailableError('route qualifier cannot be read');
        throw error;
      }
    });
  }

  async list(ws: WorkspaceContext) {
    const [rows, versions] = await Promise.all([this.qualifiers.list(undefined, ws.id), this.publications.versions(ws.id)]);
    return { qualifiers: rows.map((row) => toQualifierDocument(row, versions)) };
  }

  async upsert(ctx: WorkspaceContext, body: UpsertQualifierDto) {
    if (!QUALIFIER_ID.test(body.qualifier_id)) throw badRequest('qualifier_id must be [a-z0-9_-]');
    const capabilityId = body.capability_id ?? null;
    if (capabilityId !== null) {
      if (codePoints(capabilityId) > MAX_CAPABILITY_ID) {
        throw new FieldValidationError([{ loc: ['body', 'capability_id'], msg: `capability_id must be at most ${MAX_CAPABILITY_ID} characters`, type: 'string_too_long' }]);
      }
      if (!isCapabilityId(capabilityId)) throw badRequest(CAPABILITY_PREFIX);
    }
    const constraint = parseConstraint(body.constraint);
    const expected = body.expected_revision ?? null;
    const values = {
      capabilityId,
      onlyTargets: constraint.only_targets,
      ignoreTargets: constraint.ignore_targets,
      pinTarget: constraint.pin_target,
      preferAuth: body.prefer_auth ?? [],
      preferSurface: body.prefer_surface ?? [],
      preferSources: body.prefer_sources ?? [],
      minQuality: body.min_quality ?? 0,
      maxCost: body.max_cost_micros_usd === undefined || body.max_cost_micros_usd === null ? null : String(body.max_cost_micros_usd),
      allowFallbacks: body.allow_fallbacks ?? false,
    };

    const { row, version } = await this.access.mutate(ctx, async (tx, ws) => {
      const current = await this.qualifiers.lock(tx.manager, ws.id, body.qualifier_id);
      let saved: RouteQualifier;
      if (expected === null) {
        if (current) throw conflict(REVISION_CONFLICT);
        if ((await this.qualifiers.count(tx.manager, ws.id)) >= MAX_QUALIFIERS) throw conflict('route_qualifier_limit_reached');
        saved = await this.qualifiers.insert(tx.manager, ws.id, body.qualifier_id, values);
      } else {
        if (!current || current.revision !== expected) throw conflict(REVISION_CONFLICT);
        saved = { ...current, revision: current.revision + 1, ...values };
        await this.qualifiers.update(tx.manager, ws.id, body.qualifier_id, saved.revision, values);
      }
      const staged = await this.publications.stage(tx, ws.id, 'route_qualifier.upsert');
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'route_qualifier.upsert',
        target: saved.qualifierId,
        detail: { qualifier_id: saved.qualifierId, snapshot_version: staged },
      });
      return { row: saved, version: staged };
    });
    return toQualifierDocument(row, { snapshot_version: version, published_version: (await this.publications.versions(ctx.id)).published_version });
  }

  async remove(ctx: WorkspaceContext, qualifierId: string, expected: number | undefined) {
    if (!QUALIFIER_ID.test(qualifierId)) throw badRequest('qualifier_id must be [a-z0-9_-]');
    const { revision, version } = await this.access.mutate(ctx, async (tx, ws) => {
      const current = await this.qualifiers.lock(tx.manager, ws.id, qualifierId);
      if (!current) throw notFound('qualifier not found');
      if (expected !== undefined && current.revision !== expected) throw conflict(REVISION_CONFLICT);
      await this.qualifiers.delete(tx.manager, ws.id, qualifierId);
      const staged = await this.publications.stage(tx, ws.id, 'route_qualifier.delete');
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'route_qualifier.delete',
        target: qualifierId,
        detail: { qualifier_id: qualifierId, snapshot_version: staged },
      });
      return { revision: current.revision, version: staged };
    });
    return toTombstone(ctx.id, qualifierId, revision, { snapshot_version: version, published_version: (await this.publications.versions(ctx.id)).published_version });
  }
}
