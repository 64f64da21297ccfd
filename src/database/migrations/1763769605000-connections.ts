import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Connections (tool connections, broker registrations and, later, model-provider connections),
 * catalog sessions and OAuth state rows.
 *
 * One store for every connection kind: `kind` is `tool` (a catalog connector on a lane),
 * `catalog_provider` (the workspace's account at a broker lane, holding the broker API key) or
 * `model` (a bring-your-own-key model provider: `connector_slug` holds the provider name, `source`
 * `native`, `custody` `obol`, `target` `model_provider`, and `model_config` the pattern, upstream
 * model and base URL; `model_config` is non-null exactly for `kind = 'model'`). Credential columns
 * (`credential_envelope`, `key_id`, `credential_scheme`, `last4`, `credential_revision`) mean the same
 * for every kind. Tool lists and the live-per-connector rule ignore model rows.
 */
export class Connections1763769605000 implements MigrationInterface {
  name = 'Connections1763769605000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE connections (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        kind text NOT NULL CHECK (kind IN ('tool', 'catalog_provider', 'model')),
        connector_slug text NOT NULL,
        source text NOT NULL CHECK (source IN ('native', 'broker_a', 'broker_b')),
        custody text NOT NULL,
        target text NOT NULL CHECK (target IN ('gateway', 'broker', 'worker', 'model_provider')),
        status text NOT NULL CHECK (status IN ('pending', 'active', 'disabled')),
        auth_profile jsonb NOT NULL,
        auth_profile_digest text NOT NULL,
        model_config jsonb,
        client_secret_envelope text,
        credential_envelope text,
        refresh_envelope text,
        key_id text,
        credential_scheme text,
        last4 text,
        expires_at timestamptz(3),
        last_refreshed_at timestamptz(3),
        credential_revision integer NOT NULL DEFAULT 0,
        refresh_failure text,
        refresh_attempts integer NOT NULL DEFAULT 0,
        refresh_not_before timestamptz(3),
        refresh_lease_until timestamptz(3),
        created_by text REFERENCES users(id),
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        CONSTRAINT connections_model_config_check CHECK ((kind = 'model') = (model_config IS NOT NULL))
      );
      CREATE UNIQUE INDEX connections_live_connector_key ON connections (workspace_id, connector_slug)
        WHERE status IN ('pending', 'active') AND kind <> 'model';
      CREATE INDEX connections_workspace_idx ON connections (workspace_id, created_at, id);
      CREATE INDEX connections_refresh_due_idx ON connections (expires_at)
        WHERE status = 'active' AND refresh_envelope IS NOT NULL AND refresh_failure IS NULL;

      CREATE TABLE catalog_sessions (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        connection_id text NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
        user_id text NOT NULL REFERENCES users(id),
        provider text NOT NULL,
        upstream_id text NOT NULL,
        allowed_mcp_origins jsonb NOT NULL,
        expires_at timestamptz(3) NOT NULL,
        consumed_at timestamptz(3),
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      );
      CREATE INDEX catalog_sessions_connection_idx ON catalog_sessions (connection_id);

      CREATE TABLE oauth_states (
        state_hash text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        connection_id text NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
        user_id text NOT NULL REFERENCES users(id),
        code_verifier text NOT NULL,
        credential_revision integer NOT NULL,
        expires_at timestamptz(3) NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      );
      CREATE INDEX oauth_states_connection_idx ON oauth_states (connection_id);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE oauth_states, catalog_sessions, connections`);
  }
}
