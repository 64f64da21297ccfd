import { parseUtcTimestamp } from 'src/common/time/time';

/** Lanes in their fixed order (spec: `native`, `broker_a`, `broker_b`). */
export const LANES = ['native', 'broker_a', 'broker_b'] as const;
export type Lane = (typeof LANES)[number];
export type BrokerLane = Exclude<Lane, 'native'>;
export const AUTH_MODES = ['oauth2', 'api_key'] as const;
export type AuthMode = (typeof AUTH_MODES)[number];
export const EFFECT_KINDS = ['read', 'create', 'update', 'delete', 'external_side_effect'] as const;
export type EffectKind = (typeof EFFECT_KINDS)[number];

export interface CatalogSource {
  provider: Lane;
  auth_modes: AuthMode[];
  /** The lane offers an MCP surface. */
  mcp: boolean;
  /** Reviewed origins an MCP endpoint of this lane may live on (frozen onto catalog sessions). */
  allowed_mcp_origins: string[];
  /** The connector's id on that lane. */
  upstream_id: string;
  /** Hand-authored quality prior of this lane for the connector, in basis points (not a measurement). */
  quality_prior_bps: number;
}

/** How the native lane authenticates: a customer's OAuth client with a fixed scope, or a restricted key. */
export type NativeProfile = { type: 'oauth2'; authorize_url: string; token_url: string; scope: string } | { type: 'api_key' };

/** A reviewed tool description: the sentence presets and capability views are compiled from. */
export interface CatalogTool {
  /** `{connector_slug}.{tool}`; its first segment is the connector slug. */
  name: string;
  capability_id: string;
  /** `read` exactly when the capability's effect kind is `read`. */
  effect: 'read' | 'write';
  description: string;
}

export interface CatalogConnector {
  slug: string;
  display_name: string;
  description: string;
  categories: string[];
  default_tier: 'native' | 'federated';
  sources: CatalogSource[];
  /** Present exactly when the connector has a `native` source. */
  native_profile?: NativeProfile;
  tools: CatalogTool[];
}

export interface CatalogCapability {
  capability_id: string;
  display_name: string;
  description: string;
  effect_kind: EffectKind;
  feature_vocabulary: string[];
}

export interface CatalogLane {
  display_name: string;
  /** The broker's hosted connect page; a catalog redirect points here. */
  connect_url: string;
}

export interface CatalogData {
  schema_version: 1;
  generated_at: string;
  lanes: Record<BrokerLane, CatalogLane>;
  capabilities: CatalogCapability[];
  connectors: CatalogConnector[];
}

export class CatalogSchemaError extends Error {}

type Json = Record<string, unknown>;
const SLUG = /^[a-z][a-z0-9_]*$/;
const CATEGORY = /^[a-z][a-z_]*$/;
const CAPABILITY_ID = /^cap\.[a-z0-9_]+(\.[a-z0-9_]+)*$/;
const TOOL_SUFFIX = /^[a-z][a-z0-9_]*$/;

function fail(path: string, message: string): never {
  throw new CatalogSchemaError(`catalog ${path}: ${message}`);
}

function object(value: unknown, path: string, keys: string[], optional: string[] = []): Json {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) fail(path, 'must be an object');
  const record = value as Json;
  for (const key of Object.keys(record)) if (!keys.includes(key) && !optional.includes(key)) fail(`${path}.${key}`, 'unknown field');
  for (const key of keys) if (!(key in record)) fail(`${path}.${key}`, 'required');
  return record;
}

function text(value: unknown, path: string, pattern?: RegExp): string {
  if (typeof value !== 'string' || value.trim() === '' || value !== value.trim()) fail(path, 'must be a non-empty trimmed string');
  if (pattern && !pattern.test(value)) fail(path, `must match ${pattern}`);
  return value;
}

function list(value: unknown, path: string, minimum = 1): unknown[] {
  if (!Array.isArray(value) || value.length < minimum) fail(path, `must be a list of at least ${minimum}`);
  return value;
}

function unique(values: string[], path: string): void {
  if (new Set(values).size !== values.length) fail(path, 'entries must be unique');
}

function httpsUrl(value: unknown, path: string, originOnly = false): string {
  const url = text(value, path);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    fail(path, 'must be a URL');
  }
  if (parsed.protocol !== 'https:' || parsed.username || parsed.password) fail(path, 'must be an https URL without credentials');
  if (originOnly && parsed.origin !== url) fail(path, 'must be an origin');
  return url;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], path: string): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) fail(path, `must be one of ${allowed.join(', ')}`);
  return value as T;
}

function validateSource(value: unknown, path: string): CatalogSource {
  const s = object(value, path, ['provider', 'auth_modes', 'mcp', 'allowed_mcp_origins', 'upstream_id', 'quality_prior_bps']);
  const authModes = list(s.auth_modes, `${path}.auth_modes`).map((m, i) => oneOf(m, AUTH_MODES, `${path}.auth_modes[${i}]`));
  unique(authModes, `${path}.auth_modes`);
  if (typeof s.mcp !== 'boolean') fail(`${path}.mcp`, 'must be a boolean');
  const origins = list(s.allowed_mcp_origins, `${path}.allowed_mcp_origins`, 0).map((o, i) => httpsUrl(o, `${path}.allowed_mcp_origins[${i}]`, true));
  if (s.mcp !== origins.length > 0) fail(`${path}.allowed_mcp_origins`, 'must be non-empty exactly when mcp is true');
  const quality = s.quality_prior_bps;
  if (!Number.isInteger(quality) || (quality as number) < 0 || (quality as number) > 10000) fail(`${path}.quality_prior_bps`, 'must be an integer 0-10000');
  return {
    provider: oneOf(s.provider, LANES, `${path}.provider`),
    auth_modes: authModes,
    mcp: s.mcp,
    allowed_mcp_origins: origins,
    upstream_id: text(s.upstream_id, `${path}.upstream_id`),
    quality_prior_bps: quality as number,
  };
}

function validateProfile(value: unknown, path: string): NativeProfile {
  const type = oneOf((value as Json | null)?.type, AUTH_MODES, `${path}.type`);
  if (type === 'api_key') {
    object(value, path, ['type']);
    return { type };
  }
  const p = object(value, path, ['type', 'authorize_url', 'token_url', 'scope']);
  return { type, authorize_url: httpsUrl(p.authorize_url, `${path}.authorize_url`), token_url: httpsUrl(p.token_url, `${path}.token_url`), scope: text(p.scope, `${path}.scope`) };
}

/**
 * Checks the frozen catalog against its schema and its own cross-references (sorted unique slugs,
 * lanes in order, a native profile exactly when there is a native source, tools bound to known
 * capabilities with a consistent effect). Throws a CatalogSchemaError naming the first problem.
 */
export function validateCatalog(value: unknown): CatalogData {
  const root = object(value, '', ['schema_version', 'generated_at', 'lanes', 'capabilities', 'connectors']);
  if (root.schema_version !== 1) fail('schema_version', 'must be 1');
  const generatedAt = text(root.generated_at, 'generated_at');
  if (!parseUtcTimestamp(generatedAt)) fail('generated_at', 'must be an RFC 3339 UTC timestamp');

  const lanesIn = object(root.lanes, 'lanes', ['broker_a', 'broker_b']);
  const lanes = {} as Record<BrokerLane, CatalogLane>;
  for (const lane of ['broker_a', 'broker_b'] as const) {
    const l = object(lanesIn[lane], `lanes.${lane}`, ['display_name', 'connect_url']);
    lanes[lane] = { display_name: text(l.display_name, `lanes.${lane}.display_name`), connect_url: httpsUrl(l.connect_url, `lanes.${lane}.connect_url`) };
  }

  const capabilities = list(root.capabilities, 'capabilities').map((c, i): CatalogCapability => {
    const path = `capabilities[${i}]`;
    const cap = object(c, path, ['capability_id', 'display_name', 'description', 'effect_kind', 'feature_vocabulary']);
    const features = list(cap.feature_vocabulary, `${path}.feature_vocabulary`).map((f, j) => text(f, `${path}.feature_vocabulary[${j}]`, SLUG));
    unique(features, `${path}.feature_vocabulary`);
    return {
      capability_id: text(cap.capability_id, `${path}.capability_id`, CAPABILITY_ID),
      display_name: text(cap.display_name, `${path}.display_name`),
      description: text(cap.description, `${path}.description`),
      effect_kind: oneOf(cap.effect_kind, EFFECT_KINDS, `${path}.effect_kind`),
      feature_vocabulary: features,
    };
  });
  unique(capabilities.map((c) => c.capability_id), 'capabilities');
  const effectOf = new Map(capabilities.map((c) => [c.capability_id, c.effect_kind]));

  const connectors = list(root.connectors, 'connectors').map((c, i): CatalogConnector => {
    const path = `connectors[${i}]`;
    const row = object(c, path, ['slug', 'display_name', 'description', 'categories', 'default_tier', 'sources', 'tools'], ['native_profile']);
    const slug = text(row.slug, `${path}.slug`, SLUG);
    const categories = list(row.categories, `${path}.categories`).map((x, j) => text(x, `${path}.categories[${j}]`, CATEGORY));
    unique(categories, `${path}.categories`);
    const sources = list(row.sources, `${path}.sources`).map((s, j) => validateSource(s, `${path}.sources[${j}]`));
    const order = sources.map((s) => LANES.indexOf(s.provider));
    if (order.some((o, j) => j > 0 && o <= order[j - 1])) fail(`${path}.sources`, 'lanes must be unique and in the order native, broker_a, broker_b');
    const native = sources.find((s) => s.provider === 'native');
    const profile = row.native_profile === undefined ? undefined : validateProfile(row.native_profile, `${path}.native_profile`);
    if (!native !== !profile) fail(`${path}.native_profile`, 'required exactly when a native source exists');
    if (native && profile && (native.auth_modes.length !== 1 || native.auth_modes[0] !== profile.type)) fail(`${path}.sources`, 'the native source auth mode must be the native profile type');
    const defaultTier = oneOf(row.default_tier, ['native', 'federated'] as const, `${path}.default_tier`);
    if ((defaultTier === 'native') !== Boolean(native)) fail(`${path}.default_tier`, 'must be native exactly when a native source exists');
    const tools = list(row.tools, `${path}.tools`).map((t, j): CatalogTool => {
      const tpath = `${path}.tools[${j}]`;
      const tool = object(t, tpath, ['name', 'capability_id', 'effect', 'description']);
      const name = text(tool.name, `${tpath}.name`);
      if (!name.startsWith(`${slug}.`) || !TOOL_SUFFIX.test(name.slice(slug.length + 1))) fail(`${tpath}.name`, 'must be the connector slug, a dot and a tool segment');
      const capabilityId = text(tool.capability_id, `${tpath}.capability_id`);
      const effectKind = effectOf.get(capabilityId);
      if (!effectKind) fail(`${tpath}.capability_id`, 'unknown capability');
      const effect = oneOf(tool.effect, ['read', 'write'] as const, `${tpath}.effect`);
      if ((effect === 'read') !== (effectKind === 'read')) fail(`${tpath}.effect`, 'must be read exactly when the capability effect kind is read');
      return { name, capability_id: capabilityId, effect, description: text(tool.description, `${tpath}.description`) };
    });
    unique(tools.map((t) => t.name), `${path}.tools`);
    const out: CatalogConnector = {
      slug,
      display_name: text(row.display_name, `${path}.display_name`),
      description: text(row.description, `${path}.description`),
      categories,
      default_tier: defaultTier,
      sources,
      tools,
    };
    if (profile) out.native_profile = profile;
    return out;
  });
  const slugs = connectors.map((c) => c.slug);
  unique(slugs, 'connectors');
  if (slugs.some((s, i) => i > 0 && s < slugs[i - 1])) fail('connectors', 'must be sorted by slug');
  return { schema_version: 1, generated_at: generatedAt, lanes, capabilities, connectors };
}
