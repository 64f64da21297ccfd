// The committed types are what docs/openapi.json generates: after a route changes, `npm run openapi`.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { publicDocument, render, SCHEMA } from '../scripts/generate.mjs';

test('src/schema.ts is what docs/openapi.json generates (run `npm run openapi` after changing a route)', async () => {
  assert.equal(readFileSync(SCHEMA, 'utf8'), await render(), 'src/schema.ts is stale: run `npm run openapi`');
});

test('the public document keeps /api routes only, and only the components they reach', () => {
  const document = {
    openapi: '3.1.0',
    paths: {
      '/api/v1/things': { get: { parameters: [{ name: 'limit', in: 'query', required: true, schema: { type: 'integer', default: 50 } }], responses: { 200: { $ref: '#/components/responses/Things' } } } },
      '/internal/v1/things': { get: { responses: { 200: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Secret' } } } } } } },
      '/.well-known/keys.json': { get: { responses: {} } },
      '/healthz': { get: { responses: {} } },
    },
    components: {
      responses: { Things: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } } },
      schemas: { Thing: { type: 'object', properties: { owner: { $ref: '#/components/schemas/Owner' } } }, Owner: { type: 'string' }, Secret: { type: 'string' } },
      securitySchemes: { session: { type: 'http', scheme: 'bearer' } },
    },
  };
  const kept = publicDocument(document);
  assert.deepEqual(Object.keys(kept.paths), ['/api/v1/things']);
  assert.deepEqual(Object.keys(kept.components.schemas).sort(), ['Owner', 'Thing']);
  assert.deepEqual(Object.keys(kept.components.responses), ['Things']);
  assert.deepEqual(kept.components.securitySchemes, document.components.securitySchemes);
  assert.equal(kept.paths['/api/v1/things'].get.parameters[0].required, false);
});

test('the generated types name no internal, well-known or health route', () => {
  const schema = readFileSync(SCHEMA, 'utf8');
  const routes = [...schema.matchAll(/^ {4}"(\/[^"]*)": \{$/gm)].map((match) => match[1]);
  assert.ok(routes.length > 50);
  assert.deepEqual(routes.filter((route) => !route.startsWith('/api/v1/')), []);
});
