import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { parseArgs } from 'node:util';
import { AppModule } from 'src/app.module';
import { JsonLogger } from 'src/common/logging/json-logger';
import { AppConfig, ConfigError, loadConfig } from 'src/config/config';
import { openDatabase } from 'src/bootstrap';
import { runMigrations } from 'src/database/migrate';
import { demoReport } from 'src/modules/demo/demo-report';
import { DemoSeeder } from 'src/modules/demo/demo.seeder';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { UsageService } from 'src/modules/usage/usage.service';
import { monthStart } from 'src/modules/streams/stream-projector';
import { AuditTrailService } from 'src/modules/audit/audit-trail.service';
import { verifyExportFile } from 'src/modules/audit/audit-export-file';
import { Jwks, loadKeys } from 'src/common/signing/jws';
import { describeVerification, VerifySummary } from 'src/modules/audit/audit-verifier';
import { verifySnapshot } from 'src/modules/publication/snapshot-integrity';
import { readFile } from 'node:fs/promises';

const USAGE = 'usage: cli <workspace:freeze|workspace:unfreeze <ws_id> | workspace:assistant <ws_id> on|off | org:grant <org_id> <usr_id> | dev:token --sub S [--email E] [--ttl SECONDS] | demo:seed [--workspace ws_id] | audit:checkpoint [ws_id] | audit:check <ws_id> | usage:key-months [YYYY-MM] | audit:verify FILE [--keys FILE_OR_URL]... [--checkpoints FILE]... [--allow-unsigned-tail] | snapshot:verify FILE [--keys FILE_OR_URL]... | migration:run>';

class CliError extends Error {}

/**
 * The offline verifiers' `FILE [--keys FILE_OR_URL]...` (and `audit:verify`'s own options): the
 * file and control's public keys, every `--keys` JWKS together, by default the live set from
 * PUBLIC_URL. With `--keys` no configuration is read: verifying needs no database, secret or
 * signing key, and works on a machine that has only the files and the keys.
 */
async function fileAndKeys(rest: string[], auditOptions = false) {
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      keys: { type: 'string', multiple: true },
      ...(auditOptions ? { checkpoints: { type: 'string', multiple: true }, 'allow-unsigned-tail': { type: 'boolean' } } : {}),
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) throw new CliError(USAGE);
  const sources = values.keys ?? [`${loadConfig().publicUrl}/.well-known/control-signing-keys.json`];
  const sets = await Promise.all(sources.map((source) => loadKeys(source))).catch((error: Error) => {
    throw new CliError(error.message);
  });
  const keys: Jwks = { keys: sets.flatMap((set) => set.keys) };
  return { file: positionals[0], keys, checkpoints: values.checkpoints as string[] | undefined, allowUnsignedTail: values['allow-unsigned-tail'] === true };
}

/** Runs `work` against the application's modules (no HTTP listener, no jobs). */
async function withApp<T>(config: AppConfig, work: (get: <S>(type: new (...args: never[]) => S) => S) => Promise<T>): Promise<T> {
  const database = await openDatabase(config);
  try {
    await runMigrations(database.url);
    const app = await NestFactory.createApplicationContext(
      AppModule.register({ ...config, databaseUrl: database.url, databasePoolSize: 1 }, { jobs: false }),
      { logger: new JsonLogger('warn') },
    );
    try {
      return await work((type) => app.get(type));
    } finally {
      await app.close();
    }
  } finally {
    await database.stop();
  }
}

/** A verification's one-line summary: the output when the trail holds, the failure otherwise. */
function verdict(summary: VerifySummary): string {
  if (!summary.ok) throw new CliError(describeVerification(summary));
  return describeVerification(summary);
}

/** `audit:verify` and `snapshot:verify`: a file checked against control's JWKS, without the application. */
async function verifyOffline(command: 'audit:verify' | 'snapshot:verify', rest: string[]): Promise<string> {
  switch (command) {
    case 'audit:verify': {
      const { file, keys, checkpoints, allowUnsignedTail } = await fileAndKeys(rest, true);
      const summary = await verifyExportFile(file, keys, { keptCheckpoints: checkpoints, allowUnsignedTail }).catch((error: Error) => {
        throw new CliError(error.message);
      });
      return verdict(summary);
    }
    case 'snapshot:verify': {
      const { file, keys } = await fileAndKeys(rest);
      let snapshot: { workspace_id?: unknown; version?: unknown };
      try {
        snapshot = JSON.parse(await readFile(file, 'utf8'));
      } catch (error) {
        throw new CliError(`not a snapshot file: ${(error as Error).message}`);
      }
      const check = verifySnapshot(snapshot, keys);
      if (!check.ok) throw new CliError(`snapshot refused: ${check.reason}`);
      return `snapshot verified: workspace ${String(snapshot.workspace_id)} version ${String(snapshot.version)}, ${check.digest}, signed by ${check.kid}`;
    }
  }
}

async function run(argv: string[]): Promise<string> {
  const [command, ...rest] = argv;
  if (command === 'audit:verify' || command === 'snapshot:verify') return verifyOffline(command, rest);
  const config = loadConfig();
  switch (command) {
    case 'migration:run': {
      const database = await openDatabase(config);
      try {
        const applied = await runMigrations(database.url);
        return applied.length ? `applied: ${applied.join(', ')}` : 'no pending migrations';
      } finally {
        await database.stop();
      }
    }
    case 'workspace:freeze':
    case 'workspace:unfreeze': {
      const [ws] = rest;
      if (!ws || rest.length !== 1) throw new CliError(USAGE);
      const frozen = command === 'workspace:freeze';
      const found = await withApp(config, (get) => get(WorkspacesService).setFlag(ws, 'frozen', frozen));
      if (!found) throw new CliError(`workspace not found: ${ws}`);
      return `${ws} ${frozen ? 'frozen' : 'unfrozen'}`;
    }
    case 'workspace:assistant': {
      const [ws, state] = rest;
      if (!ws || (state !== 'on' && state !== 'off') || rest.length !== 2) throw new CliError(USAGE);
      const found = await withApp(config, (get) => get(WorkspacesService).setFlag(ws, 'assistant_enabled', state === 'on'));
      if (!found) throw new CliError(`workspace not found: ${ws}`);
      return `${ws} assistant ${state}`;
    }
    case 'org:grant': {
      const [org, user] = rest;
      if (!org || !user || rest.length !== 2) throw new CliError(USAGE);
      await withApp(config, (get) => get(WorkspacesService).grantOrganization(org, user));
      return `${user} may create workspaces in ${org}`;
    }
    case 'dev:token': {
      const { values } = parseArgs({ args: rest, options: { sub: { type: 'string' }, email: { type: 'string' }, ttl: { type: 'string' } }, strict: true });
      if (!values.sub) throw new CliError(USAGE);
      const ttl = values.ttl === undefined ? 3600 : Number(values.ttl);
      if (!Number.isInteger(ttl) || ttl < 1) throw new CliError('--ttl must be a positive whole number of seconds');
      return new DevIdentity(config).token(values.sub, values.email, ttl);
    }
    case 'demo:seed': {
      const { values } = parseArgs({ args: rest, options: { workspace: { type: 'string' } }, strict: true });
      return withApp(config, async (get) => demoReport(await get(DemoSeeder).seed(values.workspace), config));
    }
    case 'audit:checkpoint': {
      const [ws] = rest;
      if (rest.length > 1) throw new CliError(USAGE);
      const signed = await withApp(config, (get) => get(AuditTrailService).checkpoint(ws));
      if (!signed) throw new CliError(`workspace not found: ${ws}`);
      return signed.length ? signed.map((c) => `${c.workspace_id} checkpoint at seq ${c.seq}`).join('\n') : 'no audit chain grew since its last checkpoint';
    }
    case 'audit:check': {
      const [ws] = rest;
      if (!ws || rest.length !== 1) throw new CliError(USAGE);
      const summary = await withApp(config, (get) => get(AuditTrailService).check(ws));
      if (!summary) throw new CliError(`workspace not found: ${ws}`);
      return verdict(summary);
    }
    case 'usage:key-months': {
      const [month] = rest;
      if (rest.length > 1 || (month !== undefined && !/^\d{4}-(0[1-9]|1[0-2])$/.test(month))) throw new CliError(USAGE);
      const start = month === undefined ? monthStart(new Date()) : new Date(`${month}-01T00:00:00Z`);
      const written = await withApp(config, (get) => get(UsageService).resumKeyMonth(start));
      return `${written} key months of ${start.toISOString().slice(0, 7)} summed again from the hourly rollups`;
    }
    default:
      throw new CliError(USAGE);
  }
}

run(process.argv.slice(2)).then(
  (out) => {
    process.stdout.write(`${out}\n`);
    process.exit(0);
  },
  (error: unknown) => {
    const known = error instanceof CliError || error instanceof ConfigError || (error instanceof Error && /not found/.test(error.message));
    process.stderr.write(`${known ? (error as Error).message : `error: ${error instanceof Error ? error.message : String(error)}`}\n`);
    process.exit(1);
  },
);
