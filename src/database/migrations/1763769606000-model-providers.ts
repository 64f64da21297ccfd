import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Pricebooks and route qualifiers. Model-provider connections are rows of `connections`
 * (`kind = 'model'`, see the connections migration); this adds the index that keeps one
 * non-disabled connection per model pattern and finds it under the workspace lock.
 *
 * A route qualifier stores its constraint as three nullable columns (`only_targets`,
 * `ignore_targets`, `pin_target`); none set is kind `none`. A row with more than one set cannot
 * be read back as a qualifier (500 `route_qualifier_payload_invalid`, snapshot unavailable).
 */
export class ModelProviders1763769606000 implements MigrationInterface {
  name = 'ModelProviders1763769606000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE UNIQUE INDEX connections_live_model_pattern_key ON connections (workspace_id, (model_config->>'model_pattern'))
        WHERE kind = 'model' AND status <> 'disabled';

      CREATE TABLE pricebooks (
        workspace_id text PRIMARY KEY REFERENCES workspaces(id),
        revision integer NOT NULL,
        prices jsonb NOT NULL,
        updated_by text REFERENCES users(id),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      );

      CREATE TABLE route_qualifiers (
        workspace_id text NOT NULL REFERENCES workspaces(id),
        qualifier_id text COLLATE "C" NOT NULL,
        revision integer NOT NULL,
        capability_id text,
        only_targets jsonb,
        ignore_targets jsonb,
        pin_target text,
        prefer_auth jsonb NOT NULL,
        prefer_surface jsonb NOT NULL,
        prefer_sources jsonb NOT NULL,
        min_quality integer NOT NULL,
        max_cost bigint,
        allow_fallbacks boolean NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (workspace_id, qualifier_id)
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE route_qualifiers, pricebooks; DROP INDEX connections_live_model_pattern_key`);
  }
}
