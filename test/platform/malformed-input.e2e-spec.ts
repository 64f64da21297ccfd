import { Validator } from '@cfworker/json-schema';
import fc from 'fast-check';
import { AddressInfo } from 'node:net';
import { signServiceToken } from 'src/platform/auth/service-token';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { loadDocument } from 'test/support/observed-responses';
import { RawAnswer, rawRequest } from 'test/support/raw-http';

/**
 * Keeps issue 17's rule true: whatever a client sends, no operation of docs/openapi.json answers
 * 5xx, and every refusal is in one of the specification's three shapes (`{detail: string}`, a
 * `{detail: [{loc, msg, type}]}` validation failure, the `{error: {code, message}}` envelope), or is
 * the body the document gives that route and status (the Workers refusal objects). Each operation is
 * driven with generated hostile path segments, query values and bodies (NUL, lone surrogates,
 * integers past int32, nulls, wrong types, arrays nested 20,000 deep, undecodable escapes), as an
 * owner of a real workspace (and real ids of what it holds) so the requests get past the guards to
 * validation and behind the lookups. The runs per operation bound the suite's time.
 */
const RUNS = Number(process.env.MALFORMED_RUNS ?? 12);

interface Schema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
}
interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string; schema?: Schema }[];
  body?: Schema;
  responses: Record<string, { $ref?: string; content?: Record<string, { schema: Schema }> }>;
}
interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

const doc = loadDocument() as unknown as {
  paths: Record<string, Record<string, { parameters?: Operation['params']; requestBody?: { content: Record<string, { schema: Schema }> }; responses: Operation['responses'] }>>;
  components: { schemas: Record<string, Schema>; responses: Record<string, { content?: Record<string, { schema: Schema }> }> };
};
const OPERATIONS: Operation[] = Object.entries(doc.paths).flatMap(([path, item]) =>
  ['get', 'put', 'post', 'patch', 'delete']
    .filter((method) => item[method])
    .map((method) => ({
      method: method.toUpperCase(),
      path,
      params: item[method].parameters ?? [],
      body: item[method].requestBody?.content['application/json']?.schema,
      responses: item[method].responses,
    })),
);

const deref = (schema: Schema | undefined): Schema => {
  let s = schema ?? {};
  while (s.$ref) s = doc.components.schemas[s.$ref.split('/').pop()!];
  return s;
};

// Text PostgreSQL or an encoder cannot take, beside merely odd text.
const char16 = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
const hostileText = fc.oneof(
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800x', 'x\udfff', '\ud83d', '\udc00\ud800', '', ' ', '\t\n', 'é', '💥', '%00', '%ZZ', '\\u0000', '../..', 'a'.repeat(3000)),
  fc.string({ unit: char16, maxLength: 12 }),
  fc.string({ maxLength: 12 }),
);
const hostileNumber = fc.oneof(
  fc.constantFrom(2147483647, 2147483648, -2147483648, -2147483649, 9007199254740993, 1e21, 1e308, -1e308, -1, 0, 0.5, 1.5, -0),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const hostileKey = fc.oneof(fc.constantFrom('\u0000', 'k\u0000', '\ud800', '__proto__x', ''), fc.string({ unit: char16, maxLength: 6 }));
/** Stands for an array nested 20,000 levels deep, spliced into the body text after serializing (the test's own JSON.stringify would recurse into it). */
const DEEP = '\u0001deep\u0001';
const DEEP_JSON = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
const serialize = (value: unknown) => (JSON.stringify(value) ?? '').replaceAll(JSON.stringify(DEEP), DEEP_JSON);
const hostileJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.constant(DEEP),
    fc.boolean(),
    hostileText,
    hostileNumber,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(hostileKey, tie('value'), { maxKeys: 3 }),
  ),
})).value;

/** A value for `schema`: well-formed in its type most of the time, hostile otherwise. */
function valueFor(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(schema);
  const alternatives = [...(s.oneOf ?? []), ...(s.anyOf ?? []), ...(s.allOf ?? [])];
  if (alternatives.length > 0 && depth < 4) return fc.oneof(...alternatives.map((a) => valueFor(a, depth + 1)));
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  let typed: fc.Arbitrary<unknown>;
  if (s.enum) typed = fc.constantFrom(...s.enum);
  else if (s.const !== undefined) typed = fc.constant(s.const);
  else if (type === 'string') typed = hostileText;
  else if (type === 'integer' || type === 'number') typed = hostileNumber;
  else if (type === 'boolean') typed = fc.boolean();
  else if (type === 'array') typed = depth < 4 ? fc.array(valueFor(s.items, depth + 1), { maxLength: 3 }) : fc.constant([]);
  else if (type === 'object' || s.properties) typed = depth < 4 ? objectFor(s, depth + 1) : fc.constant({});
  else typed = hostileJson;
  return fc.oneof({ weight: 3, arbitrary: typed }, { weight: 1, arbitrary: hostileJson });
}

function objectFor(schema: Schema, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const entries = Object.entries(schema.properties ?? {}).map(([name, property]) => fc.option(valueFor(property, depth).map((value) => [name, value] as const), { freq: 4 }));
  const extra = typeof schema.additionalProperties === 'object' ? fc.dictionary(hostileKey, valueFor(schema.additionalProperties, depth), { maxKeys: 2 }) : fc.constant({});
  return fc.tuple(fc.tuple(...entries), extra).map(([present, more]) => ({ ...more, ...Object.fromEntries(present.filter((e) => e !== null)) }));
}

/** A path segment as sent: the encoding of hostile text, or an escape no decoder takes. */
const encode = (text: string): string => {
  try {
    return encodeURIComponent(text);
  } catch {
    return '%ED%A0%80'; // a lone surrogate has no UTF-8 encoding; this is its would-be escape
  }
};
const hostileSegment = fc.oneof(
  fc.constantFrom('%00', 'x%00y', '%ZZ', '%FF%FE', '%C0%80', '%ED%A0%80', '%', 'a%2Fb', '%20', 'ws_000000000000000000000000'),
  hostileText.filter((t) => t.length > 0).map(encode),
);
const hostileQueryValue = fc.oneof(
  fc.constantFrom('%00', 'a%00', '%ZZ', '%FF%FE', '%ED%A0%80', '2147483648', '-2147483649', '99999999999999999999', '1e3', '0x10', '1.5', '-0', 'null', ''),
  hostileText.map(encode),
  hostileNumber.map(String),
);

/** A path segment for parameter `name`: mostly a real id of the seeded workspace when there is one, so requests reach what lies behind the lookup. */
function segmentFor(name: string, ids: Record<string, string[]>): fc.Arbitrary<string> {
  const real = ids[name] ?? [];
  if (real.length === 0) return hostileSegment;
  return fc.oneof({ weight: name === 'ws' || name === 'workspaceId' ? 4 : 2, arbitrary: fc.constantFrom(...real) }, { weight: 1, arbitrary: hostileSegment });
}

function requestFor(op: Operation, ids: Record<string, string[]>): fc.Arbitrary<Sent> {
  const pathParams = op.params.filter((p) => p.in === 'path');
  const segments = fc.record(Object.fromEntries(pathParams.map((p) => [p.name, segmentFor(p.name, ids)])));
  const queryParams = op.params.filter((p) => p.in === 'query');
  const query = fc.tuple(
    ...queryParams.map((p) => fc.option(fc.array(hostileQueryValue, { minLength: 1, maxLength: 2 }).map((values) => values.map((v) => `${p.name}=${v}`).join('&')), { freq: 2 })),
  );
  const body: fc.Arbitrary<{ type?: string; text?: string }> = op.body
    ? fc.oneof(
        { weight: 8, arbitrary: objectFor(deref(op.body), 1).map((value) => ({ type: 'application/json', text: serialize(value) })) },
        { weight: 1, arbitrary: hostileJson.map((value) => ({ type: 'application/json', text: serialize(value) })) },
        { weight: 1, arbitrary: fc.record({ type: fc.constantFrom('application/json', 'text/plain', 'application/xml', 'application/x-www-form-urlencoded'), text: fc.constantFrom('{', '{"a":', 'a=%00', '\u0000', '{"a":"\\ud800"}', '[1,2]', '"x"') }) },
      )
    : fc.oneof({ weight: 4, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.constant({ type: 'application/json', text: '{"\\u0000":"\\ud800"}' }) });
  const method = fc.oneof({ weight: 12, arbitrary: fc.constant(op.method) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS') });
  return fc.tuple(segments, query, body, method).map(([values, parts, { type, text }, verb]) => {
    const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => values[name]);
    const search = parts.filter((p) => p !== null).join('&');
    const headers: Record<string, string> = type ? { 'Content-Type': type } : {};
    return { method: verb, path: search ? `${path}?${search}` : path, headers, body: text };
  });
}

/** A schema of the document made standalone: its component references point into `$defs`. */
const rooted = (schema: Schema): Schema => JSON.parse(JSON.stringify(schema).replaceAll('#/components/schemas/', '#/$defs/')) as Schema;
const validators = new Map<string, Validator>();
function conforms(schema: Schema, body: unknown): boolean {
  const key = JSON.stringify(schema);
  if (!validators.has(key)) validators.set(key, new Validator(rooted({ ...schema, $defs: doc.components.schemas } as Schema) as never, '2020-12', false));
  return validators.get(key)!.validate(body).valid;
}

/** `{detail: string}`, `{detail: [{loc, msg, type}]}` or `{error: {code, message}}`, and nothing more. */
function inSpecShape(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const keys = Object.keys(body);
  if (keys.length !== 1) return false;
  const { detail, error } = body as { detail?: unknown; error?: { code?: unknown; message?: unknown } };
  if (typeof detail === 'string') return true;
  if (Array.isArray(detail)) {
    return detail.every(
      (e: { loc?: unknown; msg?: unknown; type?: unknown }) =>
        Array.isArray(e.loc) && e.loc.every((l) => typeof l === 'string' || Number.isInteger(l)) && typeof e.msg === 'string' && typeof e.type === 'string' && Object.keys(e).length === 3,
    );
  }
  return typeof error === 'object' && error !== null && typeof error.code === 'string' && typeof error.message === 'string' && Object.keys(error).length === 2;
}

/** The body schema the document gives this operation and status, if any. */
function documented(op: Operation, status: number): Schema | undefined {
  let response = op.responses[String(status)];
  if (response?.$ref) response = doc.components.responses[response.$ref.split('/').pop()!];
  return response?.content?.['application/json']?.schema;
}

/** Why an answer breaks the rule, or null. */
function fault(op: Operation, sent: Sent, answer: RawAnswer): string | null {
  if (answer.status < 400) return null;
  const schema = documented(op, answer.status);
  const own = sent.method === op.method && schema !== undefined && !inSpecShape(answer.body) && conforms(schema, answer.body);
  if (answer.status >= 500) return own && (answer.body as { detail?: { set_by?: string } }).detail?.set_by === 'control' ? null : `answered ${answer.status}`;
  return inSpecShape(answer.body) || own ? null : `answered ${answer.status} in no specification shape`;
}

/** One of each kind of object a path names, made through the API: its id by path parameter name. */
async function seed(t: TestApp, owner: Operator): Promise<Record<string, string[]>> {
  const base = `/api/v1/workspaces/${owner.workspaceId}`;
  const post = async (path: string, body: object, status: number) => {
    const res = await t.http().post(`${base}${path}`).set(bearer(owner)).send(body);
    expect([path, res.status]).toEqual([path, status]);
    return res.body;
  };
  const rule = { rule_id: 'r', effect: 'allow', actions: ['tool.call'], tools: ['stripe.*'], environments: ['prod'], approver_roles: ['owner'], approver_user_ids: [], quorum: 1 };
  const key = await post('/keys', { agent_id: 'agent-1' }, 201);
  const policy = await post('/approval-policies', { name: 'p', rules: [rule] }, 200);
  const worker = await post('/workers', { slug: 'w-1', display_name: 'W', agent_passport_id: 'agent-1' }, 201);
  const workflow = await post('/workflows', { slug: 'f-1', display_name: 'F' }, 201);
  const profile = await post('/worker-session-profiles', { name: 'crm', environment_class: 'code' }, 201);
  const connection = await post('/connections', { slug: 'stripe', source: 'native' }, 200);
  const model = await post('/model-providers', { provider: 'provider_a', api_key: 'sk-test-0123456789', model_pattern: 'gpt-x', upstream_model: 'gpt-x' }, 200);
  const qualifier = await post('/route-qualifiers', { qualifier_id: 'q1' }, 200);
  // Another member, so a members route has a real user to act on without touching the owner.
  const viewer = await t.member(owner, 'viewer');
  return {
    ws: [owner.workspaceId],
    workspaceId: [owner.workspaceId],
    userId: [viewer.userId],
    keyId: [key.key_id],
    policyId: [policy.policy_id],
    workerId: [worker.resource_id],
    workflowId: [workflow.resource_id],
    profileId: [profile.session_profile_id],
    connectionId: [connection.connection.connection_id, model.connection.connection_id],
    qualifierId: [qualifier.qualifier_id],
    slug: ['stripe'],
  };
}

describe(`malformed input on every operation (${process.env.HTTP_PLATFORM ?? 'express'})`, () => {
  let gw: GatewayEmulator;
  let t: TestApp;
  let owner: Operator;
  let port: number;
  let ids: Record<string, string[]>;
  beforeAll(async () => {
    // A gateway that answers, so a request that passes validation is not a 502 for want of one.
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    owner = await t.signIn();
    ids = await seed(t, owner);
  });
  afterAll(async () => {
    await t.close();
    await gw.stop();
  });

  it.each(OPERATIONS.map((op) => [`${op.method} ${op.path}`, op] as const))('%s', async (_name, op) => {
    await fc.assert(
      fc.asyncProperty(requestFor(op, ids), async (sent) => {
        const auth = sent.path.startsWith('/internal/') ? { Authorization: `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}` } : bearer(owner);
        const answer = await rawRequest(port, sent.method, sent.path, { ...auth, ...sent.headers }, sent.body);
        const why = fault(op, sent, answer);
        if (why) throw new Error(`${why}: ${JSON.stringify(answer.body).slice(0, 300)}`);
      }),
      { numRuns: RUNS },
    );
  });

  // Sampling reaches a null in one optional field only now and then (a reconnect's `api_key: null`
  // answered 500 on one CI run), so every body field is also sent null, alone, on the real objects.
  const nullable = OPERATIONS.flatMap((op) => Object.keys(deref(op.body).properties ?? {}).map((field) => [`${op.method} ${op.path} {${field}: null}`, op, field] as const));
  it.each(nullable)('%s', async (_name, op, field) => {
    const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name]?.[0] ?? 'x');
    const auth = path.startsWith('/internal/') ? { Authorization: `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}` } : bearer(owner);
    const sent = { method: op.method, path, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ [field]: null }) };
    const answer = await rawRequest(port, sent.method, sent.path, { ...auth, ...sent.headers }, sent.body);
    expect([answer.status, fault(op, sent, answer)]).toEqual([answer.status, null]);
  });
});
