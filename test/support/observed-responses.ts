/**
 * Holds the OpenAPI document (docs/openapi.json) to what the e2e suites see. Every test
 * application records each response: route template, status, and whether the body conforms to the
 * schema the document gives that status. A suite's observations go to a file of the run
 * (`OBSERVATIONS_DIR`, made by the e2e project's global setup); the global teardown then fails the
 * run on any status the document does not list or any body that does not conform, and, when every
 * suite ran, on any documented status no suite observed.
 */
import { Validator } from '@cfworker/json-schema';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const OBSERVATIONS_DIR = 'CONTROL_OPENAPI_OBSERVATIONS';
const DOCUMENT = 'docs/openapi.json';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

type Content = Record<string, { schema: object }>;
type Response = { $ref?: string; description?: string; content?: Content };
export interface Document {
  paths: Record<string, Record<string, { responses: Record<string, Response> }>>;
  components: { schemas: Record<string, object>; responses: Record<string, Response> };
}

/** Shared responses no suite can provoke on every route; each has tests of its own mechanism. */
const MECHANISM_RESPONSES = new Set(['Internal', 'TooLarge', 'Malformed', 'IdentityOrDatabaseUnavailable', 'IdentityOrReadModelUnavailable', 'ServiceAuthOrDatabaseUnavailable']);

/** `route → status → first mismatch (or '' when every body conformed)`. */
type Observations = Record<string, Record<string, string>>;

export function loadDocument(): Document {
  return JSON.parse(readFileSync(DOCUMENT, 'utf8')) as Document;
}

function resolve(doc: Document, response: Response): { name?: string; response: Response } {
  if (!response.$ref) return { response };
  const name = response.$ref.split('/').pop()!;
  return { name, response: doc.components.responses[name] };
}

/** Checks the responses of one test application against the document, as they are sent. */
export class ResponseRecorder {
  private readonly seen: Observations = {};
  private readonly validators = new Map<string, Validator | null>();

  constructor(private readonly doc: Document) {}

  record(method: string, template: string | undefined, status: number, contentType: string | undefined, payload: unknown): void {
    if (!template || template.startsWith('/api/docs')) return;
    const route = `${method.toLowerCase()} ${template.replace(/:(\w+)/g, '{$1}')}`;
    const statuses = (this.seen[route] ??= {});
    if (statuses[status]) return; // one mismatch per route and status is enough to report
    statuses[status] = this.mismatch(route, status, contentType, payload);
  }

  private mismatch(route: string, status: number, contentType: string | undefined, payload: unknown): string {
    const [method, path] = route.split(' ');
    const documented = this.doc.paths[path]?.[method]?.responses[String(status)];
    if (!documented) return `status ${status} is not documented`;
    const { response } = resolve(this.doc, documented);
    const validator = this.validator(`${route} ${status}`, response);
    const json = contentType?.startsWith('application/json') ?? false;
    if (validator === null) return json ? 'a JSON body where the document has none' : '';
    if (!json || typeof payload !== 'string') return `no JSON body where the document has one (${contentType ?? 'no content type'})`;
    const body: unknown = JSON.parse(payload);
    if (status < 300 && Object.keys(response.content!['application/json'].schema).length === 0) {
      return 'the document gives this body no schema (add @Returns to the handler)';
    }
    const result = validator.validate(body);
    if (result.valid) return '';
    const where = result.errors.map((e) => `${e.instanceLocation}: ${e.error}`).slice(-3).join('; ');
    return `body does not conform: ${where} (${payload.slice(0, 300)})`;
  }

  private validator(key: string, response: Response): Validator | null {
    if (!this.validators.has(key)) {
      const schema = response.content?.['application/json']?.schema;
      const rooted = schema && JSON.parse(JSON.stringify({ ...schema, $defs: this.doc.components.schemas }).replaceAll('#/components/schemas/', '#/$defs/'));
      this.validators.set(key, rooted ? new Validator(rooted, '2020-12', false) : null);
    }
    return this.validators.get(key)!;
  }

  /** Adds this application's observations to the run's (a no-op outside a Jest run with the global setup). */
  flush(dir = process.env[OBSERVATIONS_DIR]): void {
    if (dir) writeFileSync(join(dir, `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}.json`), JSON.stringify(this.seen));
  }
}

export function createObservationsDir(): string {
  return mkdtempSync(join(tmpdir(), 'control-openapi-'));
}

function merge(dir: string): Observations {
  const all: Observations = {};
  for (const file of readdirSync(dir)) {
    const part = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Observations;
    for (const [route, statuses] of Object.entries(part)) {
      const into = (all[route] ??= {});
      for (const [status, mismatch] of Object.entries(statuses)) if (!into[status]) into[status] = mismatch;
    }
  }
  return all;
}

/** Every documented `route status` no suite observed (shared mechanism responses excepted). */
function unobserved(doc: Document, seen: Observations): string[] {
  const out: string[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS.filter((m) => item[m])) {
      for (const [status, response] of Object.entries(item[method].responses)) {
        const { name } = resolve(doc, response);
        if (name && MECHANISM_RESPONSES.has(name)) continue;
        if (seen[`${method} ${path}`]?.[status] === undefined) out.push(`${method} ${path} ${status}`);
      }
    }
  }
  return out;
}

/**
 * The failures of a run: mismatches always; documented statuses no suite observed, of every route
 * when `complete`, else of the routes (`method path`) matching `CONTROL_OPENAPI_COMPLETE`, a regular
 * expression for checking one module's routes on a partial run.
 */
export function checkObservations(doc: Document, dir: string, complete: boolean): string[] {
  const seen = merge(dir);
  rmSync(dir, { recursive: true, force: true });
  const failures = Object.entries(seen).flatMap(([route, statuses]) =>
    Object.entries(statuses)
      .filter(([, mismatch]) => mismatch)
      .map(([status, mismatch]) => `${route} ${status}: ${mismatch}`),
  );
  const only = process.env.CONTROL_OPENAPI_COMPLETE;
  const missing = complete || only ? unobserved(doc, seen).filter((r) => complete || new RegExp(only!).test(r)) : [];
  failures.push(...missing.map((r) => `${r}: documented, never observed by an e2e suite`));
  return failures;
}
