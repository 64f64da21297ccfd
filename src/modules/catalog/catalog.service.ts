import { Injectable } from '@nestjs/common';
import { canonicalJson, sha256Hex } from 'src/common/crypto/crypto';
import { ApiError } from 'src/common/http/errors';
import { decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import catalogFile from 'src/modules/catalog/data/catalog.v1.json';
import {
  BrokerLane,
  CatalogCapability,
  CatalogConnector,
  CatalogData,
  CatalogLane,
  CatalogSource,
  CatalogTool,
  Lane,
  LANES,
  validateCatalog,
} from 'src/modules/catalog/catalog.schema';

/**
 * A binding: one way to reach a capability, i.e. one reviewed tool of a connector on one lane.
 * Derived from the frozen data (tool x source); the routing views decorate it per workspace.
 */
export interface CatalogBinding {
  /** `{tool}@{lane}`, e.g. `github.create_issue@native`. */
  binding_id: string;
  capability_id: string;
  tool: string;
  connector_slug: string;
  custody: 'native' | 'federated';
  surface: 'mcp' | 'rest';
  auth_modes: string[];
  catalog_source: Lane;
  /** What this route can prove at best: the gateway observes native calls; a broker at most attests. */
  evidence_ceiling: 'gateway_observed' | 'broker_attested';
  /** `base_micros_usd` is null: the catalog prices nothing (unpriced natively, bundled on a broker). */
  cost: { base_micros_usd: null; bundled_in_broker: boolean };
  quality_prior_bps: number;
  /** Every feature of the capability's vocabulary: `exact` on the native lane, `mapped` through a broker. */
  coverage: { feature: string; claim: 'supported'; fidelity: 'exact' | 'mapped' }[];
  /** Broker lanes share the broker's upstream quota across its tenants. */
  shared_quota: boolean;
  /** Native calls forward the idempotency key upstream; broker-side retries are disabled, so nothing is forwarded. */
  idempotency_propagation: 'forwarded' | 'none';
  status: 'active';
}

export interface BrowseQuery {
  q?: string;
  category?: string;
  source?: Lane;
  limit?: number;
  offset?: number;
  cursor?: string;
}

export const CATALOG_PAGE_DEFAULT = 24;
export const CATALOG_CURSOR_MAX = 128;
export const CATALOG_OFFSET_MAX = 100_000;
const CURSOR = { o: 'int', f: 'string' } as const;

/** The gallery card of a browse page: sources reduced to provider and auth modes. */
export function toCatalogCard(c: CatalogConnector) {
  return {
    slug: c.slug,
    display_name: c.display_name,
    description: c.description,
    categories: c.categories,
    default_tier: c.default_tier,
    sources: c.sources.map((s) => ({ provider: s.provider, auth_modes: s.auth_modes })),
  };
}

/** The full catalog row (the unfiltered index and the single-entry read). */
export function toCatalogRow(c: CatalogConnector) {
  return {
    slug: c.slug,
    display_name: c.display_name,
    description: c.description,
    categories: c.categories,
    default_tier: c.default_tier,
    sources: c.sources.map((s) => ({ provider: s.provider, auth_modes: s.auth_modes, mcp: s.mcp, allowed_mcp_origins: s.allowed_mcp_origins, upstream_id: s.upstream_id })),
  };
}

/**
 * The frozen connector catalog shipped with this release (`data/catalog.v1.json`), validated when
 * the service starts (an invalid file stops the start). Read-only API for every domain:
 * connectors and their lanes and native auth profiles, reviewed tool descriptions, capabilities
 * and bindings.
 */
@Injectable()
export class CatalogService {
  readonly data: CatalogData;
  private readonly bySlug: Map<string, CatalogConnector>;
  private readonly capabilityById: Map<string, CatalogCapability>;
  private readonly allBindings: CatalogBinding[];
  private readonly categoryCounts: { name: string; count: number }[];

  constructor() {
    this.data = validateCatalog(catalogFile);
    this.bySlug = new Map(this.data.connectors.map((c) => [c.slug, c]));
    this.capabilityById = new Map(this.data.capabilities.map((c) => [c.capability_id, c]));
    this.allBindings = this.data.connectors.flatMap((c) => c.tools.flatMap((t) => c.sources.map((s) => this.bind(c, t, s))));
    const counts = new Map<string, number>();
    for (const c of this.data.connectors) for (const category of c.categories) counts.set(category, (counts.get(category) ?? 0) + 1);
    this.categoryCounts = [...counts].map(([name, count]) => ({ name, count })).sort((a, b) => b.count - a.count || (a.name < b.name ? -1 : 1));
  }

  get schemaVersion(): number {
    return this.data.schema_version;
  }

  get generatedAt(): string {
    return this.data.generated_at;
  }

  /** Every connector, sorted by slug. */
  connectors(): readonly CatalogConnector[] {
    return this.data.connectors;
  }

  connector(slug: string): CatalogConnector | undefined {
    return this.bySlug.get(slug);
  }

  /** The connector's source on `lane`, when the connector is carried there. */
  source(slug: string, lane: Lane): CatalogSource | undefined {
    return this.bySlug.get(slug)?.sources.find((s) => s.provider === lane);
  }

  /** A broker lane's hosted connect page. */
  lane(lane: BrokerLane): CatalogLane {
    return this.data.lanes[lane];
  }

  /** Every reviewed tool description, each with its connector slug (the tool name's first segment). */
  tools(): readonly (CatalogTool & { connector_slug: string })[] {
    return this.data.connectors.flatMap((c) => c.tools.map((t) => ({ ...t, connector_slug: c.slug })));
  }

  /** Every capability, sorted by id. */
  capabilities(): readonly CatalogCapability[] {
    return this.data.capabilities;
  }

  capability(capabilityId: string): CatalogCapability | undefined {
    return this.capabilityById.get(capabilityId);
  }

  /** Bindings sorted by `binding_id`; only those of one capability when given. */
  bindings(capabilityId?: string): CatalogBinding[] {
    const rows = capabilityId === undefined ? this.allBindings : this.allBindings.filter((b) => b.capability_id === capabilityId);
    return [...rows].sort((a, b) => (a.binding_id < b.binding_id ? -1 : a.binding_id > b.binding_id ? 1 : 0));
  }

  /** One catalog slug, or 404 `unknown catalog slug`. */
  require(slug: string): CatalogConnector {
    const connector = this.bySlug.get(slug);
    if (!connector) throw new ApiError(404, 'unknown catalog slug');
    return connector;
  }

  /**
   * One browse page. Filters: `q` (case-insensitive, in slug, name or description), `category`,
   * `source` (lane). `categories` counts the unfiltered catalog; `lanes` and `lane_overlap` count the
   * rows matching `q` and `category` (before the lane filter), so every lane tab shows its size.
   */
  browse(query: BrowseQuery) {
    if (query.cursor !== undefined && query.offset !== undefined) throw new ApiError(400, 'provide either cursor or offset, not both');
    const fingerprint = sha256Hex(canonicalJson({ q: query.q ?? null, category: query.category ?? null, source: query.source ?? null })).slice(0, 16);
    let offset = query.offset ?? 0;
    if (query.cursor !== undefined) {
      const cursor = decodeCursor(CURSOR, 'catalog', query.cursor, CATALOG_CURSOR_MAX);
      if (!cursor || cursor.o < 0 || cursor.o > CATALOG_OFFSET_MAX) throw new ApiError(400, 'malformed catalog cursor');
      if (cursor.f !== fingerprint) throw new ApiError(400, 'catalog cursor does not match this query');
      offset = cursor.o;
    }
    const limit = query.limit ?? CATALOG_PAGE_DEFAULT;
    const needle = query.q?.toLowerCase();
    const matching = this.data.connectors.filter(
      (c) =>
        (needle === undefined || [c.slug, c.display_name, c.description].some((field) => field.toLowerCase().includes(needle))) &&
        (query.category === undefined || c.categories.includes(query.category)),
    );
    const rows = query.source === undefined ? matching : matching.filter((c) => c.sources.some((s) => s.provider === query.source));
    const next = offset + limit;
    return {
      rows: rows.slice(offset, next),
      categories: this.categoryCounts,
      lanes: LANES.map((lane) => ({ source: lane, count: matching.filter((c) => c.sources.some((s) => s.provider === lane)).length })),
      lane_overlap: matching.filter((c) => c.sources.filter((s) => s.provider !== 'native').length > 1).length,
      page: {
        total: rows.length,
        limit,
        offset,
        next_cursor: next < rows.length && next <= CATALOG_OFFSET_MAX ? encodeCursor(CURSOR, 'catalog', { o: next, f: fingerprint }) : null,
      },
    };
  }

  private bind(c: CatalogConnector, t: CatalogTool, s: CatalogSource): CatalogBinding {
    const native = s.provider === 'native';
    return {
      binding_id: `${t.name}@${s.provider}`,
      capability_id: t.capability_id,
      tool: t.name,
      connector_slug: c.slug,
      custody: native ? 'native' : 'federated',
      surface: s.mcp ? 'mcp' : 'rest',
      auth_modes: s.auth_modes,
      catalog_source: s.provider,
      evidence_ceiling: native ? 'gateway_observed' : 'broker_attested',
      cost: { base_micros_usd: null, bundled_in_broker: !native },
      quality_prior_bps: s.quality_prior_bps,
      coverage: this.capabilityById.get(t.capability_id)!.feature_vocabulary.map((feature) => ({ feature, claim: 'supported', fidelity: native ? 'exact' : 'mapped' })),
      shared_quota: !native,
      idempotency_propagation: native ? 'forwarded' : 'none',
      status: 'active',
    };
  }
}
