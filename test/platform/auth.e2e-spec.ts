import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { bearer, startTestApp, TestApp } from 'test/support/app';
import { eventually } from 'test/support/eventually';
import { IdentityIssuer } from 'test/support/identity-issuer';
import { randomUUID } from 'node:crypto';
import { JWKS_POLL_MS } from 'src/platform/auth/issuer-keys';

describe('operator authentication', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const me = (authorization?: string) => {
    const req = t.http().get('/api/v1/me');
    return authorization === undefined ? req : req.set('Authorization', authorization);
  };

  it('answers 401 session required without a header or with another scheme', async () => {
    for (const header of [undefined, 'Basic dXNlcjpwYXNz', 'Token abc', 'Bearer', 'Bearer ']) {
      const res = await me(header).expect(401);
      expect(res.body).toEqual({ detail: 'session required' });
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });

  it('accepts a valid RS256 token and maps it to a usr_ id', async () => {
    const token = await t.issuer.token({ sub: 'alice', email: 'alice@example.com' });
    const res = await me(`Bearer ${token}`).expect(200);
    expect(res.body.user).toEqual({ id: expect.stringMatching(/^usr_[0-9a-f]{24}$/), email: 'alice@example.com' });
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('refreshes the e-mail from the token and keeps the same user id', async () => {
    const first = await me(`Bearer ${await t.issuer.token({ sub: 'bob', email: 'bob@old.example' })}`).expect(200);
    const second = await me(`Bearer ${await t.issuer.token({ sub: 'bob', email: 'bob@new.example' })}`).expect(200);
    expect(second.body.user).toEqual({ id: first.body.user.id, email: 'bob@new.example' });
  });

  describe('answers 401 session not accepted for every verification failure', () => {
    const rejects = async (token: string) => {
      const res = await me(`Bearer ${token}`).expect(401);
      expect(res.body).toEqual({ detail: 'session not accepted' });
    };

    it('garbage', () => rejects('not.a.jwt'));
    it('expired beyond the 30 s leeway', async () => rejects(await t.issuer.token({ expiresInS: -31 })));
    it('wrong issuer', async () => rejects(await t.issuer.token({ issuer: 'https://evil.example' })));
    it('missing sub', async () => rejects(await t.issuer.token({ omit: ['sub'] })));
    it('missing exp', async () => rejects(await t.issuer.token({ omit: ['exp'] })));
    it('missing iss', async () => rejects(await t.issuer.token({ omit: ['iss'] })));
    it('unknown kid', async () => rejects(await t.issuer.token({ kid: 'no-such-key' })));

    it('a key the issuer does not publish, under the published kid', async () => {
      const { privateKey } = await generateKeyPair('RS256');
      await rejects(await t.issuer.token({ key: privateKey }));
    });

    it('alg none', async () => {
      const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      const payload = { sub: 'mallory', iss: t.issuer.url, exp: Math.floor(Date.now() / 1000) + 600 };
      await rejects(`${enc({ alg: 'none', kid: t.issuer.kid })}.${enc(payload)}.`);
    });

    it('HS256 signed with the public key as the secret', async () => {
      const jwk = t.issuer.publicKeyJwk;
      const secret = new TextEncoder().encode(JSON.stringify(jwk));
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', kid: t.issuer.kid })
        .setIssuer(t.issuer.url)
        .setSubject('mallory')
        .setExpirationTime('10m')
        .sign(secret);
      await rejects(token);
      const nSecret = Buffer.from(jwk.n!, 'base64url');
      await rejects(await new SignJWT({}).setProtectedHeader({ alg: 'HS256', kid: t.issuer.kid }).setIssuer(t.issuer.url).setSubject('m').setExpirationTime('10m').sign(nSecret));
    });
  });

  it('accepts a token expired within the 30 s leeway', async () => {
    await me(`Bearer ${await t.issuer.token({ expiresInS: -10 })}`).expect(200);
  });

  it('never accepts a virtual key or a service token at /api/v1', async () => {
    await me('Bearer ob_live_abcdefghijklmnopqrstuvwxyz0123456789').expect(401, { detail: 'session not accepted' });
  });

  it('keeps the role table in control: a token claiming a workspace or role grants nothing', async () => {
    const owner = await t.signIn();
    const token = await t.issuer.token({ sub: 'claims-everything' });
    const res = await t.http().get(`/api/v1/workspaces/${owner.workspaceId}`).set(bearer({ token })).expect(404);
    expect(res.body).toEqual({ detail: 'workspace not found' });
  });
});

describe('authorized parties', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ IDENTITY_AUTHORIZED_PARTIES: 'dashboard, cli' });
  });
  afterAll(() => t.close());

  it('accepts a listed azp and refuses a missing or unlisted one', async () => {
    await t.http().get('/api/v1/me').set(bearer({ token: await t.issuer.token({ azp: 'cli' }) })).expect(200);
    for (const token of [await t.issuer.token({}), await t.issuer.token({ azp: 'other' })]) {
      await t.http().get('/api/v1/me').set(bearer({ token })).expect(401, { detail: 'session not accepted' });
    }
  });
});

describe('identity not configured', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ IDENTITY_ISSUER: undefined });
  });
  afterAll(() => t.close());

  it('answers 503 on every operator route, with or without a token, and keeps /healthz open', async () => {
    for (const path of ['/api/v1/me', '/api/v1/workspaces', '/api/v1/workspaces/ws_x', '/api/v1/workspaces/ws_x/audit']) {
      const res = await t.http().get(path).set('Authorization', 'Bearer x').expect(503);
      expect(res.body).toEqual({ detail: 'dashboard identity is not configured' });
      expect(res.headers['cache-control']).toBe('no-store');
    }
    const health = await t.http().get('/healthz').expect(200);
    expect(health.body).toEqual({ ok: true });
    expect(health.headers['cache-control']).toBeUndefined();
  });
});

describe('an issuer whose iss ends in /', () => {
  it('compares iss with IDENTITY_ISSUER verbatim and fetches the JWKS without the doubled slash', async () => {
    const issuer = await IdentityIssuer.start();
    const t = await startTestApp({ IDENTITY_ISSUER: `${issuer.url}/` });
    try {
      const me = async (token: string) => t.http().get('/api/v1/me').set(bearer({ token }));
      const res = await me(await issuer.token({ sub: 'slash', issuer: `${issuer.url}/` }));
      expect(res.status).toBe(200);
      expect(await me(await issuer.token({ sub: 'slash', issuer: issuer.url }))).toMatchObject({ status: 401, body: { detail: 'session not accepted' } });
    } finally {
      await t.close();
      await issuer.stop();
    }
  });
});

describe('JWKS caching', () => {
  it('reads the key set on its own cadence: many sessions and unknown kids cause no JWKS request', async () => {
    const t = await startTestApp();
    try {
      const token = await t.issuer.token({ sub: 'cache' });
      const started = Date.now();
      const before = t.issuer.jwksRequests;
      for (let i = 0; i < 5; i++) await t.http().get('/api/v1/me').set(bearer({ token })).expect(200);
      for (let i = 0; i < 20; i++) await t.http().get('/api/v1/me').set(bearer({ token: await t.issuer.token({ kid: `rotated-${i}` }) })).expect(401);
      // One read a second at most, whatever was sent.
      expect(t.issuer.jwksRequests - before).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / JWKS_POLL_MS) + 1);
    } finally {
      await t.close();
    }
  });

  it('a flood of forged kids while the issuer publishes a new key: real sessions with it get in within a second, the flood costs no JWKS request', async () => {
    const t = await startTestApp();
    const me = (token: string) => t.http().get('/api/v1/me').set(bearer({ token }));
    try {
      await me(await t.issuer.token({ sub: 'before-rotation' })).expect(200);
      let flooding = true;
      let forged = 0;
      const flood = Array.from({ length: 8 }, async () => {
        while (flooding) {
          const res = await me(await t.issuer.token({ kid: `forged-${randomUUID()}` }));
          expect(res.status).toBe(401);
          forged++;
        }
      });
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const requestsBefore = t.issuer.jwksRequests;
      const floodStarted = Date.now();
      await t.issuer.rotate();
      const published = Date.now();
      const real = await t.issuer.token({ sub: 'after-rotation' });
      let admittedAt = 0;
      while (admittedAt === 0 && Date.now() < published + 10_000) {
        if ((await me(real)).status === 200) admittedAt = Date.now();
        else await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await new Promise((resolve) => setTimeout(resolve, 1500));
      flooding = false;
      await Promise.all(flood);
      const elapsed = Date.now() - floodStarted;
      // Within the poll interval, with room for a loaded machine's request latency.
      expect(admittedAt).toBeGreaterThan(0);
      expect(admittedAt - published).toBeLessThan(JWKS_POLL_MS + 750);
      expect(forged).toBeGreaterThan(50);
      expect(t.issuer.jwksRequests - requestsBefore).toBeLessThanOrEqual(Math.ceil(elapsed / JWKS_POLL_MS) + 1);
    } finally {
      await t.close();
    }
  });

  it('before the first successful read, a burst of sessions makes no JWKS request of its own', async () => {
    let requests = 0;
    const down = createServer((_, res) => {
      requests++;
      res.writeHead(500).end();
    });
    await new Promise<void>((r) => down.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(down.address() as AddressInfo).port}`;
    const t = await startTestApp({ IDENTITY_ISSUER: url });
    try {
      const issuer = await IdentityIssuer.start();
      // Only the reads made during the burst count: the poll ran before it, at its own pace, while the app started.
      const readsBefore = requests;
      const started = Date.now();
      const results = await Promise.all(Array.from({ length: 40 }, async () => (await t.http().get('/api/v1/me').set(bearer({ token: await issuer.token({ issuer: url }) }))).status));
      expect(results.every((status) => status === 401)).toBe(true);
      expect(requests - readsBefore).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / JWKS_POLL_MS) + 2);
      await issuer.stop();
    } finally {
      await t.close();
      down.close();
    }
  });

  it('refuses a token whose key the issuer removed once the JWKS TTL has passed, though it was accepted before', async () => {
    const t = await startTestApp({ IDENTITY_JWKS_TTL_S: '1' });
    try {
      const me = (token: string) => t.http().get('/api/v1/me').set(bearer({ token }));
      const removedKid = t.issuer.kid;
      const old = await t.issuer.token({ sub: 'removed-key' });
      await me(old).expect(200);
      await t.issuer.rotate();
      t.issuer.remove(removedKid);
      await eventually(async () => {
        const res = await me(old);
        expect([res.status, res.body]).toEqual([401, { detail: 'session not accepted' }]);
      }, 25, 200);
      await me(await t.issuer.token({ sub: 'removed-key' })).expect(200);
      await me(old).expect(401, { detail: 'session not accepted' });
      await me(await t.issuer.token({ sub: 'removed-key', kid: removedKid })).expect(401, { detail: 'session not accepted' });
    } finally {
      await t.close();
    }
  });

  it('picks up a rotated key by kid', async () => {
    // An issuer whose key set changes: the new kid is unknown to the cache and triggers one refetch.
    const first = await generateKeyPair('RS256', { extractable: true });
    const second = await generateKeyPair('RS256', { extractable: true });
    const keys = [{ ...(await exportJWK(first.publicKey)), kid: 'k1', alg: 'RS256' }];
    const server = createServer((_, res) => res.end(JSON.stringify({ keys })));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const t = await startTestApp({ IDENTITY_ISSUER: url });
    const sign = (kid: string, key: import('jose').KeyLike) =>
      new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid }).setIssuer(url).setSubject('rot').setExpirationTime('5m').sign(key);
    try {
      await eventually(async () => t.http().get('/api/v1/me').set(bearer({ token: await sign('k1', first.privateKey) })).expect(200));
      keys.push({ ...(await exportJWK(second.publicKey)), kid: 'k2', alg: 'RS256' });
      await eventually(async () => t.http().get('/api/v1/me').set(bearer({ token: await sign('k2', second.privateKey) })).expect(200), 20, 100);
    } finally {
      await t.close();
      server.close();
    }
  });
});
