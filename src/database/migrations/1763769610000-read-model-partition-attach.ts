import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A month's partition is created as a table of its own and then attached. `CREATE TABLE ...
 * PARTITION OF` locks the parent ACCESS EXCLUSIVE: it waits behind every ingestion batch and read
 * of the parent, and all of them wait behind it. `ATTACH PARTITION` takes SHARE UPDATE EXCLUSIVE,
 * which neither reads nor writes conflict with (the new table is empty, so its check is instant).
 * Still one creator at a time (advisory lock) and idempotent, so replicas and concurrent
 * ingestion batches may all call it.
 */
export class ReadModelPartitionAttach1763769610000 implements MigrationInterface {
  name = 'ReadModelPartitionAttach1763769610000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION read_model_ensure_partition(parent text, month_start date) RETURNS void
      LANGUAGE plpgsql AS $$
      DECLARE
        first date := date_trunc('month', month_start)::date;
        child text := parent || '_p' || to_char(first, 'YYYYMM');
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('read_model_partitions'));
        IF EXISTS (SELECT FROM pg_inherits WHERE inhrelid = to_regclass(child) AND inhparent = parent::regclass) THEN
          RETURN;
        END IF;
        EXECUTE format('CREATE TABLE IF NOT EXISTS %I (LIKE %I)', child, parent);
        EXECUTE format(
          'ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
          parent,
          child,
          to_char(first, 'YYYY-MM-DD') || ' 00:00:00+00',
          to_char((first + interval '1 month')::date, 'YYYY-MM-DD') || ' 00:00:00+00'
        );
      END $$;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION read_model_ensure_partition(parent text, month_start date) RETURNS void
      LANGUAGE plpgsql AS $$
      DECLARE
        first date := date_trunc('month', month_start)::date;
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('read_model_partitions'));
        EXECUTE format(
          'CREATE TABLE IF NOT EXISTS %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
          parent || '_p' || to_char(first, 'YYYYMM'),
          parent,
          to_char(first, 'YYYY-MM-DD') || ' 00:00:00+00',
          to_char((first + interval '1 month')::date, 'YYYY-MM-DD') || ' 00:00:00+00'
        );
      END $$;
    `);
  }
}
