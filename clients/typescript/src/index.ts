/**
 * The hand-written layer over the generated types (src/schema.ts) and openapi-fetch: authentication,
 * one typed error, and cursor paging. Everything a request or a response looks like comes from the
 * OpenAPI document; nothing here restates it. Runs wherever `fetch` does (Node 20+, browsers).
 */
import createClient, { type Client, type FetchResponse, type MaybeOptionalInit, type Middleware } from 'openapi-fetch';
import type { HttpMethod, PathsWithMethod, RequiredKeysOf } from 'openapi-typescript-helpers';
import type { components, paths } from './schema.js';

export type { components, operations, paths } from './schema.js';
/** Every named schema of the document: `Schemas['KeyDetail']`, `Schemas['AuditPage']`, ... */
export type Schemas = components['schemas'];

/** A session token (the dashboard's OIDC token), given once or asked for before every request. */
export type Credentials =
  | { token: string; getToken?: never }
  | { getToken: () => string | Promise<string>; token?: never };

export type ControlClientOptions = Credentials & {
  /** Origin of the control plane, e.g. `https://control.example.com` (the paths carry `/api/v1`). */
  baseUrl: string;
  /** Another `fetch` (a test double, a proxy-aware one); `globalThis.fetch` otherwise. */
  fetch?: (request: Request) => Promise<Response>;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
};

/** The three error bodies the server answers with (docs/openapi.json components). */
export type ErrorBody = Schemas['Detail'] | Schemas['ValidationError'] | Schemas['ServiceError'];
export type ValidationIssue = Schemas['ValidationError']['detail'][number];

function isErrorBody(body: unknown): body is ErrorBody {
  if (body === null || typeof body !== 'object') return false;
  const { detail, error } = body as { detail?: unknown; error?: unknown };
  return typeof detail === 'string' || Array.isArray(detail) || (error !== null && typeof error === 'object');
}

/** Every non-2xx answer: the status and the body in whichever of the three shapes the server used. */
export class ControlError extends Error {
  override readonly name = 'ControlError';

  constructor(
    readonly status: number,
    /** `undefined` when the body was none of the three shapes (a proxy's HTML page, say). */
    readonly body: ErrorBody | undefined,
    readonly response: Response,
  ) {
    super(`${status} ${ControlError.describe(body) ?? response.statusText}`.trim());
  }

  /** The `detail` message (401, 403, 404, 409, ...), if the body had that shape. */
  get detail(): string | undefined {
    return this.body !== undefined && 'detail' in this.body && typeof this.body.detail === 'string' ? this.body.detail : undefined;
  }

  /** The failing fields of a 422, if the body had that shape. */
  get issues(): ValidationIssue[] | undefined {
    return this.body !== undefined && 'detail' in this.body && Array.isArray(this.body.detail) ? this.body.detail : undefined;
  }

  /** `error.code` of a service failure (`upstream_error`, `policy_compiler_busy`, ...), if the body had that shape. */
  get code(): string | undefined {
    return this.body !== undefined && 'error' in this.body ? this.body.error.code : undefined;
  }

  private static describe(body: ErrorBody | undefined): string | undefined {
    if (body === undefined) return undefined;
    if ('error' in body) return body.error.message;
    return typeof body.detail === 'string' ? body.detail : body.detail.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; ');
  }
}

type Media = `${string}/${string}`;
type Operation<Path extends keyof paths, M extends HttpMethod> = Extract<paths[Path][M], Record<string | number, unknown>>;
type InitArg<Init> = RequiredKeysOf<Init> extends never ? [(Init & { [key: string]: unknown })?] : [Init & { [key: string]: unknown }];
/** The success body of a response union (the error branch is thrown as ControlError instead). */
type Data<Result> = Result extends { data: infer D; error?: never } ? D : never;

/** Like openapi-fetch's method, but resolves to the success body and rejects with ControlError. */
export type ControlMethod<M extends HttpMethod> = <Path extends PathsWithMethod<paths, M>, Init extends MaybeOptionalInit<paths[Path], M>>(
  url: Path,
  ...init: InitArg<Init>
) => Promise<Data<FetchResponse<Operation<Path, M>, Init, Media>>>;

export interface ControlClient {
  GET: ControlMethod<'get'>;
  POST: ControlMethod<'post'>;
  PUT: ControlMethod<'put'>;
  PATCH: ControlMethod<'patch'>;
  DELETE: ControlMethod<'delete'>;
  /** The openapi-fetch client underneath (same authentication): `{ data, error, response }` results, `parseAs: 'stream'`, middleware. */
  raw: Client<paths, Media>;
  /**
   * The workspace's live event stream (`GET /api/v1/workspaces/{ws}/events`) as an async iterator,
   * read with `fetch` streaming (a browser's `EventSource` cannot send the session header). After a
   * dropped connection it reconnects with `Last-Event-ID` set to the last message it yielded, so
   * nothing the server still holds is missed. Ends when `signal` aborts; a refusal (401, 404, 422)
   * rejects with ControlError, a 5xx or a network failure is retried after `retryMs`.
   */
  events(workspaceId: string, options?: EventsOptions): AsyncGenerator<NotificationEvent, void, undefined>;
}

/** One message of the event stream (docs/notifications.md): its id is the webhooks' `webhook-id`. */
export interface NotificationEvent {
  id: string;
  type: string;
  timestamp: string;
  data: { workspace_id: string; [key: string]: unknown };
}

export interface EventsOptions {
  /** Types or `prefix.*` patterns (`audit.event` only when named). */
  types?: string[];
  /** Start after this message id (what the outbox still holds is replayed); else new messages only. */
  after?: string;
  signal?: AbortSignal;
  /** Wait before reconnecting after a dropped connection (default 1000 ms). */
  retryMs?: number;
}

function authentication(credentials: Credentials): Middleware {
  return {
    async onRequest({ request }) {
      const token = credentials.token ?? (await credentials.getToken!());
      request.headers.set('Authorization', `Bearer ${token}`);
      return request;
    },
  };
}

export function createControlClient(options: ControlClientOptions): ControlClient {
  if (typeof options.token !== 'string' && typeof options.getToken !== 'function') throw new TypeError('createControlClient needs a token or getToken');
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const raw = createClient<paths, Media>({ baseUrl, fetch: options.fetch, headers: options.headers });
  raw.use(authentication(options));
  type Call = (url: string, init?: Record<string, unknown>) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
  const unwrap = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE') =>
    (async (url: string, init?: Record<string, unknown>) => {
      const { data, error, response } = await (raw[method] as unknown as Call)(url, init);
      if (!response.ok) throw new ControlError(response.status, isErrorBody(error) ? error : undefined, response);
      return data;
    }) as never;
  const events = (workspaceId: string, eventOptions: EventsOptions = {}) => readEvents(baseUrl, options, workspaceId, eventOptions);
  return { GET: unwrap('GET'), POST: unwrap('POST'), PUT: unwrap('PUT'), PATCH: unwrap('PATCH'), DELETE: unwrap('DELETE'), raw, events };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/** The events of one `text/event-stream` body: `id`, `event` and the joined `data` lines of each block; comments skipped. */
async function* sseBlocks(body: ReadableStream<Uint8Array>): AsyncGenerator<{ id: string; data: string }, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let id = '';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line === '' || line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') id = value;
          else if (field === 'data') data.push(value);
        }
        if (data.length > 0) yield { id, data: data.join('\n') };
      }
    }
  } finally {
    reader.releaseLock();
  }
}

async function* readEvents(baseUrl: string, options: ControlClientOptions, workspaceId: string, eventOptions: EventsOptions): AsyncGenerator<NotificationEvent, void, undefined> {
  const { signal, retryMs = 1000 } = eventOptions;
  const fetchOne = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  let last = eventOptions.after;
  while (!signal?.aborted) {
    const url = new URL(`${baseUrl}/api/v1/workspaces/${encodeURIComponent(workspaceId)}/events`);
    if (eventOptions.types) url.searchParams.set('types', eventOptions.types.join(','));
    const headers = new Headers(options.headers);
    headers.set('Authorization', `Bearer ${options.token ?? (await options.getToken!())}`);
    headers.set('Accept', 'text/event-stream');
    if (last !== undefined) headers.set('Last-Event-ID', last);
    try {
      const response = await fetchOne(new Request(url, { headers, signal }));
      if (!response.ok) {
        const body: unknown = await response.json().catch(() => undefined);
        if (response.status < 500) throw new ControlError(response.status, isErrorBody(body) ? body : undefined, response);
      } else if (response.body) {
        for await (const block of sseBlocks(response.body)) {
          const message = JSON.parse(block.data) as Omit<NotificationEvent, 'id'>;
          last = block.id;
          yield { id: block.id, ...message };
        }
      }
    } catch (error) {
      if (error instanceof ControlError) throw error;
      if (signal?.aborted) return;
      // A dropped connection or a network failure: reconnect from the last message.
    }
    await pause(retryMs, signal);
  }
}

type GetPath = PathsWithMethod<paths, 'get'>;
type Query<Path extends GetPath> = NonNullable<paths[Path]['get']['parameters']['query']>;
type Page<Path extends GetPath> = Data<FetchResponse<Operation<Path, 'get'>, unknown, Media>>;
/** The cursor-paged lists: a `cursor` query parameter and a `next_cursor` in the answer (audit, approvals, receipts, workers, runs, ...). */
export type PagedPath = {
  [Path in GetPath]: 'cursor' extends keyof Query<Path> ? ('next_cursor' extends keyof Page<Path> ? Path : never) : never;
}[GetPath];
type PageInit<Path extends PagedPath> = MaybeOptionalInit<paths[Path], 'get'>;

/**
 * Every page of a cursor-paged list, following `next_cursor` until the server has no more; with
 * `select`, every item instead. `init` is the first request's (filters, `limit`); the cursor is ours.
 */
export function paginate<Path extends PagedPath>(client: ControlClient, url: Path, init: PageInit<Path>): AsyncGenerator<Page<Path>, void, undefined>;
export function paginate<Path extends PagedPath, Item>(
  client: ControlClient,
  url: Path,
  init: PageInit<Path>,
  select: (page: Page<Path>) => readonly Item[],
): AsyncGenerator<Item, void, undefined>;
export async function* paginate(
  client: ControlClient,
  url: string,
  init: { params?: { query?: Record<string, unknown> } } | undefined,
  select?: (page: never) => readonly unknown[],
): AsyncGenerator<unknown, void, undefined> {
  const get = client.GET as unknown as (url: string, init: unknown) => Promise<{ next_cursor?: string | null }>;
  let cursor: string | undefined;
  do {
    const page = await get(url, { ...init, params: { ...init?.params, query: { ...init?.params?.query, ...(cursor === undefined ? {} : { cursor }) } } });
    if (select) yield* select(page as never);
    else yield page;
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined && cursor !== '');
}
