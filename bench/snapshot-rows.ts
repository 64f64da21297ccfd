import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';

/** How many rows of each kind a benchmark workspace's snapshot holds. */
export interface SnapshotRows {
  qualifiers: number;
  targetsPerQualifier: number;
  models: number;
  tools: number;
}

/** Route qualifiers, active model connections and active tool connections (sealed-looking envelopes) for `ws`. */
export async function seedSnapshotRows(db: DataSource, ws: string, counts: SnapshotRows): Promise<void> {
  const envelope = () => `gwenv1.${randomBytes(96).toString('base64url')}`;
  for (let i = 0; i < counts.qualifiers; i++) {
    await db.query(
      `INSERT INTO route_qualifiers (workspace_id, qualifier_id, revision, capability_id, only_targets, prefer_auth, prefer_surface, prefer_sources, min_quality, max_cost, allow_fallbacks)
       VALUES ($1, $2, 1, $3, $4, '["oauth2"]', '["mcp"]', '["native","broker_a"]', 5000, 100000, false)`,
      [ws, `q${i}`, `cap.bench.${i}`, JSON.stringify(Array.from({ length: counts.targetsPerQualifier }, (_, j) => `tool_${j}.call@native`))],
    );
  }
  for (let i = 0; i < counts.models; i++) {
    const config = { model_pattern: `bench-model-${i}*`, upstream_model: `bench-upstream-${i}`, base_url: 'https://api.provider-a.com/v1' };
    await db.query(
      `INSERT INTO connections (id, workspace_id, kind, connector_slug, source, custody, target, status, auth_profile, auth_profile_digest, model_config, credential_envelope, key_id, last4, credential_scheme, credential_revision)
       VALUES ($1, $2, 'model', 'provider_a', 'native', 'obol', 'model_provider', 'active', '{"type":"model_api_key"}', 'sha256:x', $3, $4, 'gwk_1', 'abcd', 'bearer', 1)`,
      [`conn_m${randomBytes(11).toString('hex')}`, ws, JSON.stringify(config), envelope()],
    );
  }
  for (let i = 0; i < counts.tools; i++) {
    const slug = `bench_connector_${i}`;
    await db.query(
      `INSERT INTO connections (id, workspace_id, kind, connector_slug, source, custody, target, status, auth_profile, auth_profile_digest, credential_envelope, key_id, last4, credential_scheme, credential_revision)
       VALUES ($1, $2, 'tool', $3, 'native', 'obol', 'gateway', 'active', $4, 'sha256:x', $5, 'gwk_1', 'abcd', 'api_key', 1)`,
      [`conn_t${randomBytes(11).toString('hex')}`, ws, slug, JSON.stringify({ type: 'api_key', connector_slug: slug }), envelope()],
    );
  }
}
