import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every change to the set of digests whose hot-path removal has not landed is announced by the
 * transaction that makes it, on channel `virtual_key_hot_path` (PostgreSQL delivers it at commit,
 * in commit order), so each replica's internal key lookup can serve the Redis copy of any other
 * digest (src/modules/keys/pending-removals.ts, docs/decisions.md):
 * - `k <key id> 1 <key_hash> [<previous_key_hash>]`: the key is `hot_path_pending` with these digests;
 * - `k <key id> 0`: it no longer is (or is gone);
 * - `r <digest> 1` / `r <digest> 0`: a `virtual_key_removals` row for the digest was added / deleted.
 */
export class KeyHotPathNotify1763769700000 implements MigrationInterface {
  name = 'KeyHotPathNotify1763769700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION virtual_keys_hot_path_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' THEN
          PERFORM pg_notify('virtual_key_hot_path', 'k ' || OLD.id || ' 0');
        ELSIF NEW.hot_path_pending THEN
          PERFORM pg_notify('virtual_key_hot_path', 'k ' || NEW.id || ' 1 ' || NEW.key_hash || coalesce(' ' || NEW.previous_key_hash, ''));
        ELSIF TG_OP = 'INSERT' OR OLD.hot_path_pending THEN
          PERFORM pg_notify('virtual_key_hot_path', 'k ' || NEW.id || ' 0');
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER virtual_keys_hot_path_notify AFTER INSERT OR DELETE OR UPDATE OF hot_path_pending, key_hash, previous_key_hash
      ON virtual_keys FOR EACH ROW EXECUTE FUNCTION virtual_keys_hot_path_notify()`);
    await q.query(`
      CREATE FUNCTION virtual_key_removals_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' THEN
          PERFORM pg_notify('virtual_key_hot_path', 'r ' || OLD.key_hash || ' 0');
        ELSE
          PERFORM pg_notify('virtual_key_hot_path', 'r ' || NEW.key_hash || ' 1');
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER virtual_key_removals_notify AFTER INSERT OR DELETE ON virtual_key_removals
      FOR EACH ROW EXECUTE FUNCTION virtual_key_removals_notify()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER virtual_key_removals_notify ON virtual_key_removals`);
    await q.query(`DROP FUNCTION virtual_key_removals_notify()`);
    await q.query(`DROP TRIGGER virtual_keys_hot_path_notify ON virtual_keys`);
    await q.query(`DROP FUNCTION virtual_keys_hot_path_notify()`);
  }
}
