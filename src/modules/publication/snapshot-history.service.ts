import { Injectable } from '@nestjs/common';
import { Histogram } from 'prom-client';
import { canonicalJson, sha256Hex } from 'src/common/crypto/crypto';
import { ApiError, queryError } from 'src/common/http/errors';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { formatTime, formatTimeRequired } from 'src/common/time/time';
import { Transactions } from 'src/database/transactions';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SNAPSHOT_SECTIONS } from 'src/modules/publication/publication.responses';
import { InstanceRow, SnapshotInstancesRepository } from 'src/modules/publication/snapshot-instances.repository';
import { SnapshotVersionsRepository } from 'src/modules/publication/snapshot-versions.repository';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';

/** An instance that has not reported for this long is `stale` and left out of convergence. */
export const STALE_AFTER_MS = 10 * 60 * 1000;
/** An instance that has not reported for this long is gone (a replaced pod, a retired host): it leaves the rollout view. */
export const FORGET_AFTER_HOURS = 24;
const CURSOR = { version: 'int' } as const;

/** The sections a diff compares (exactly those of the diff's schema), each with how its entries are keyed. */
const DIFF_SECTIONS: Record<(typeof SNAPSHOT_SECTIONS)[number], (value: unknown) => Map<string, unknown>> = {
  policy: (v) => new Map(v === null || v === undefined ? [] : [['policy', v]]),
  approval_rules: (v) => byKey((v as { rules?: Record<string, unknown>[] } | null)?.rules ?? [], (r) => `${String(r.policy_id)}/${String(r.rule_id)}`),
  connections: (v) => byKey(v as Record<string, unknown>[], (c) => String(c.connection_id)),
  models: (v) => byKey(v as Record<string, unknown>[], (m) => `${String(m.connection_id)}/${String(m.name)}`),
  route_qualifiers: (v) => byKey(v as Record<string, unknown>[], (q) => String(q.qualifier_id)),
  pricebook: (v) => new Map(Object.entries((v as { models?: Record<string, unknown> } | null)?.models ?? {})),
  webhook_subscriptions: (v) => byKey(v as Record<string, unknown>[], (s) => String(s.subscription_id)),
};

function byKey(entries: Record<string, unknown>[], key: (entry: Record<string, unknown>) => string): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const entry of entries ?? []) {
    const base = key(entry);
    let id = base;
    for (let n = 2; out.has(id); n++) id = `${base}#${n}`;
    out.set(id, entry);
  }
  return out;
}

/** The names of the top-level fields of two entries whose values differ (values never shown). */
function changedFields(a: unknown, b: unknown): string[] {
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object' || Array.isArray(a) || Array.isArray(b)) return canonicalJson(a) === canonicalJson(b) ? [] : ['value'];
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys.filter((k) => canonicalJson((a as Record<string, unknown>)[k]) !== canonicalJson((b as Record<string, unknown>)[k]));
}

/**
 * Sealed credentials in a document for operators: every `envelope` (and a model's `credential`,
 * which is one) becomes `sealed:sha256:<hex>` of it: shows that it changed, never the envelope.
 */
function redactSealed(value: unknown, key?: string): unknown {
  if (typeof value === 'string') return key === 'envelope' || key === 'credential' ? `sealed:sha256:${sha256Hex(value)}` : value;
  if (Array.isArray(value)) return value.map((v) => redactSealed(v));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactSealed(v, k)]));
}

export interface AppliedReport {
  instance_id: string;
  version: number;
  digest: string;
  applied_at: Date;
}

/**
 * The operator's side of publication: the kept versions (docs/rollout.md), their structural diff,
 * and the rollout view fed by what gateway instances report applying.
 */
@Injectable()
export class SnapshotHistoryService {
  private readonly convergence: Histogram;

  constructor(
    private readonly transactions: Transactions,
    private readonly workspaces: WorkspacesRepository,
    private readonly history: SnapshotVersionsRepository,
    private readonly instances: SnapshotInstancesRepository,
    private readonly publications: PublicationService,
    metrics: MetricsService,
  ) {
    this.convergence = new Histogram({
      name: 'control_snapshot_convergence_seconds',
      help: 'Time from a snapshot publish until every reporting gateway instance applied it',
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers: [metrics.registry],
    });
    metrics.gauge('control_snapshot_instances_behind', 'Gateway instances (reported in the last 10 minutes) on a version older than their workspace published one', () =>
      instances.countBehind(STALE_AFTER_MS / 1000),
    );
  }

  async versions(workspaceId: string, query: { limit: number; cursor?: string }) {
    let before: number | null = null;
    if (query.cursor !== undefined) {
      const decoded = decodeCursor(CURSOR, `snapshot-versions:${workspaceId}`, query.cursor);
      if (!decoded) throw queryError('cursor', 'invalid cursor');
      before = decoded.version;
    }
    const rows = await this.history.publishedPage(workspaceId, before, query.limit + 1);
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      workspace_id: workspaceId,
      versions: page.map((r) => ({ version: r.version, digest: r.digest, size: r.size, published_at: formatTimeRequired(r.published_at), cause: r.cause })),
      next_cursor: rows.length > query.limit && last ? encodeCursor(CURSOR, `snapshot-versions:${workspaceId}`, { version: last.version }) : null,
    };
  }

  /** A kept version's document, sealed credentials redacted; 404 `snapshot version not found`. */
  async version(workspaceId: string, version: number) {
    return redactSealed(await this.document(workspaceId, version));
  }

  private async document(workspaceId: string, version: number): Promise<Record<string, unknown>> {
    const stored = await this.publications.stored(workspaceId, version);
    if (!stored) throw new ApiError(404, 'snapshot version not found');
    return JSON.parse(stored.json) as Record<string, unknown>;
  }

  /** Added, removed and changed entries by section between two kept versions; changed entries name their fields only. */
  async diff(workspaceId: string, from: number, to: number) {
    const [a, b] = [await this.document(workspaceId, from), await this.document(workspaceId, to)];
    const sections: Record<string, { added: string[]; removed: string[]; changed: { id: string; fields: string[] }[] }> = {};
    for (const [section, entries] of Object.entries(DIFF_SECTIONS)) {
      const [before, after] = [entries(a[section]), entries(b[section])];
      const changed = [...after.keys()].filter((id) => before.has(id)).map((id) => ({ id, fields: changedFields(before.get(id), after.get(id)) }));
      sections[section] = {
        added: [...after.keys()].filter((id) => !before.has(id)).sort(),
        removed: [...before.keys()].filter((id) => !after.has(id)).sort(),
        changed: changed.filter((c) => c.fields.length > 0).sort((x, y) => (x.id < y.id ? -1 : 1)),
      };
    }
    return { workspace_id: workspaceId, from: { version: from, digest: (a.integrity as { digest: string }).digest }, to: { version: to, digest: (b.integrity as { digest: string }).digest }, sections };
  }

  /**
   * Records what an instance applied (idempotent). A version is reportable once control has served
   * its signed document, by the hot path or by the snapshot route (which serves the staged version,
   * kept, while the hot path lags or Redis is down): 409 for a version above the workspace's
   * current one or a digest that is not the kept digest of that version. An instance's record is
   * its report of the highest version, the later received of equal ones; `applied_at` is the
   * gateway's word, shown and never used to order (the controller refuses one in the future).
   */
  async applied(workspaceId: string, report: AppliedReport) {
    return this.transactions.run(async ({ manager }) => {
      const ws = await this.workspaces.versions(workspaceId, manager);
      if (!ws) throw new ApiError(404, 'workspace not found');
      if (report.version > ws.snapshot_version) throw new ApiError(409, `version ${report.version} is above the current version ${ws.snapshot_version}`);
      const kept = await this.history.digest(workspaceId, report.version, manager);
      if (kept !== report.digest) throw new ApiError(409, `digest is not the digest of snapshot version ${report.version}`);
      // Reports of one workspace are serialized, so the last of a rollout always sees the others.
      await this.instances.lockWorkspaceReports(manager, workspaceId);
      const row = await this.instances.report(manager, workspaceId, report);
      if (row.version >= ws.published_version) {
        const converged = await this.history.converge(manager, workspaceId, ws.published_version, STALE_AFTER_MS / 1000);
        if (converged?.published_at) this.convergence.observe(Math.max(0, (converged.converged_at.getTime() - converged.published_at.getTime()) / 1000));
      }
      return toInstance(row, ws.published_version, Date.now());
    });
  }

  /**
   * One retention step of the rollout view (docs/rollout.md): forgets up to `limit` instances that
   * have not reported for FORGET_AFTER_HOURS, so instance ids that a fleet churns through (every
   * replaced pod reports under a new one) do not pile up as `stale` for good. An instance that
   * reports again is listed again. Returns how many went.
   */
  forgetInstances(limit = 500): Promise<number> {
    return this.instances.forgetSilent(FORGET_AFTER_HOURS, limit);
  }

  /** The rollout view: the published version and, per instance, what it applied and whether it is current. */
  async rollout(workspaceId: string) {
    const counters = (await this.workspaces.versions(workspaceId))!;
    const published = await this.history.publication(workspaceId, counters.published_version);
    const ws = { ...counters, digest: published?.digest ?? null, published_at: published?.published_at ?? null, converged_at: published?.converged_at ?? null };
    const rows = await this.instances.list(workspaceId);
    const now = Date.now();
    const instances = rows.map((r) => toInstance(r, ws.published_version, now));
    const live = instances.filter((i) => i.state !== 'stale');
    const converged = live.length > 0 && live.every((i) => i.state === 'current');
    const lastApplied = live.reduce<string | null>((max, i) => (max === null || i.applied_at > max ? i.applied_at : max), null);
    return {
      workspace_id: workspaceId,
      snapshot_version: ws.snapshot_version,
      published_version: ws.published_version,
      digest: ws.digest,
      published_at: formatTime(ws.published_at),
      instances,
      converged,
      converged_at: converged ? (formatTime(ws.converged_at) ?? lastApplied) : null,
    };
  }
}

/** `current` for the published version or a newer one control served (its digest was checked on report), else `behind`; `stale` when silent. */
function toInstance(r: InstanceRow, publishedVersion: number, now: number) {
  const state = now - r.reported_at.getTime() > STALE_AFTER_MS ? 'stale' : r.version >= publishedVersion ? 'current' : 'behind';
  return { instance_id: r.instance_id, version: r.version, digest: r.digest, applied_at: formatTimeRequired(r.applied_at), state };
}
