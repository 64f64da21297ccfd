import { Client } from 'pg';
import { randomBytes } from 'node:crypto';

export const BASE_DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

async function admin<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: BASE_DATABASE_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * A fresh database on the real PostgreSQL for one suite (empty, or a copy of `template`), named
 * `name` or a random suite name; `drop` removes it.
 */
export async function createSuiteDatabase(options: { name?: string; template?: string } = {}): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = options.name ?? `suite_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}${options.template ? ` TEMPLATE ${options.template}` : ''}`));
  const url = new URL(BASE_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

export async function databaseExists(name: string): Promise<boolean> {
  return admin(async (c) => (await c.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [name])).rowCount === 1);
}
