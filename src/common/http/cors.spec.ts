import { inCorsScope } from 'src/common/http/cors';

describe('inCorsScope', () => {
  it.each(['/api/v1/me', '/api/v1/workspaces/ws_1/keys?limit=2', '/api/v1/', '/.well-known/control-signing-keys.json', '/api/docs/openapi.json', '/api/docs/openapi.json?v=1'])(
    'takes %s',
    (url) => expect(inCorsScope(url)).toBe(true),
  );

  it.each([
    '/internal/v1/keys/abc',
    '/internal/v1/workspaces/ws_1/snapshot',
    '/oauth/callback?state=x',
    '/healthz',
    '/readyz',
    '/api/docs',
    '/api/docs/',
    '/api/docs/openapi.jsonx',
    '/api/v1',
    '/api/v2/me',
    '/dev-identity/.well-known/jwks.json',
    '/.well-known',
    '/a',
    '/',
    '',
    '*',
  ])('leaves %s alone', (url) => expect(inCorsScope(url)).toBe(false));
});
