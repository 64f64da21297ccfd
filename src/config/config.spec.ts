import { generateKeyPairSync } from 'node:crypto';
import { ConfigError, loadConfig } from 'src/config/config';

describe('configuration', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      host: '0.0.0.0',
      httpPlatform: 'express',
      databaseUrl: undefined,
      pgliteDir: '.data/pglite',
      redisUrl: undefined,
      redisClusterNodes: undefined,
      redisPrefix: 'ob',
      identityIssuer: undefined,
      jwksTtlSeconds: 600,
      authorizedParties: [],
      serviceJwtSecret: undefined,
      gatewayUrl: 'http://127.0.0.1:8080',
      gatewayPublicUrl: 'http://127.0.0.1:8080',
      publicUrl: 'http://localhost:3000',
      webUrl: 'http://localhost:5173',
      corsOrigins: ['http://localhost:5173'],
      policyCompilerConcurrency: 2,
      devIdentity: false,
      logLevel: 'info',
      readyStreamBacklogMax: 100_000,
      streamBatchMaxBytes: 67_108_864,
      keyIdleDays: 90,
      databaseConnectTimeoutMs: 3000,
      databaseStatementTimeoutMs: 5000,
    });
  });

  it('reads the database bounds, refusing a value outside them with one line naming the variable', () => {
    expect(loadConfig({ DATABASE_CONNECT_TIMEOUT_MS: '1500', DATABASE_STATEMENT_TIMEOUT_MS: '20000' })).toMatchObject({ databaseConnectTimeoutMs: 1500, databaseStatementTimeoutMs: 20_000 });
    expect(() => loadConfig({ DATABASE_CONNECT_TIMEOUT_MS: '0' })).toThrow(/^invalid configuration: DATABASE_CONNECT_TIMEOUT_MS: /);
    expect(() => loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: 'soon' })).toThrow(/^invalid configuration: DATABASE_STATEMENT_TIMEOUT_MS: /);
  });

  it('reads and normalizes values', () => {
    const config = loadConfig({ PORT: '8081', IDENTITY_ISSUER: 'https://id.example/', IDENTITY_AUTHORIZED_PARTIES: ' a, b ,,', GATEWAY_URL: 'http://gw:9000/' });
    expect(config).toMatchObject({ port: 8081, identityIssuer: 'https://id.example/', identityJwksUri: 'https://id.example/.well-known/jwks.json', authorizedParties: ['a', 'b'], gatewayUrl: 'http://gw:9000', gatewayPublicUrl: 'http://gw:9000', publicUrl: 'http://localhost:8081' });
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['IDENTITY_ISSUER', 'not a url'],
    ['IDENTITY_JWKS_TTL_S', '0'],
    ['SERVICE_JWT_SECRET', 'short'],
    ['SERVICE_JWT_SECRET_PREVIOUS', 'short'],
    ['POLICY_COMPILER_CONCURRENCY', '-1'],
    ['LOG_LEVEL', 'loud'],
    ['DEV_IDENTITY', 'yes'],
    ['READY_STREAM_BACKLOG_MAX', '0'],
    ['READY_STREAM_BACKLOG_MAX', 'many'],
    ['STREAM_BATCH_MAX_BYTES', '65535'],
    ['STREAM_BATCH_MAX_BYTES', '1073741825'],
    ['STREAM_BATCH_MAX_BYTES', '64MB'],
    ['HTTP_PLATFORM', 'koa'],
    ['KEY_IDLE_DAYS', '0'],
    ['KEY_IDLE_DAYS', '1.5'],
    ['REDIS_CLUSTER_NODES', '127.0.0.1:7000'],
    ['REDIS_CLUSTER_NODES', 'redis://a:1,,redis://b:2'],
  ])('stops with one line naming %s for a bad value', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    try {
      loadConfig({ [name]: value });
    } catch (error) {
      expect((error as Error).message).toMatch(new RegExp(`^invalid configuration: ${name}: [^\\n]+$`));
      expect((error as Error).message).not.toContain(value === 'short' ? value : '\u0000');
    }
  });

  it('reads the readiness bound on the stream backlog', () => {
    expect(loadConfig({ READY_STREAM_BACKLOG_MAX: '250' }).readyStreamBacklogMax).toBe(250);
  });

  it('reads the byte budget of a stream consumer pass, from 64 KiB to 1 GiB', () => {
    expect(loadConfig({ STREAM_BATCH_MAX_BYTES: '65536' }).streamBatchMaxBytes).toBe(65_536);
    expect(loadConfig({ STREAM_BATCH_MAX_BYTES: '1073741824' }).streamBatchMaxBytes).toBe(1_073_741_824);
  });

  it('reads the days after which an unused key is idle', () => {
    expect(loadConfig({ KEY_IDLE_DAYS: '30' }).keyIdleDays).toBe(30);
  });

  it('selects the HTTP platform, naming the choices when the value is neither', () => {
    expect(loadConfig({ HTTP_PLATFORM: 'fastify' }).httpPlatform).toBe('fastify');
    expect(loadConfig({ HTTP_PLATFORM: 'express' }).httpPlatform).toBe('express');
    expect(() => loadConfig({ HTTP_PLATFORM: 'Express' })).toThrow(new ConfigError('invalid configuration: HTTP_PLATFORM: must be one of express, fastify'));
  });

  it('allows the origin of WEB_URL by default, a list of origins, or * when set so', () => {
    expect(loadConfig({ WEB_URL: 'https://dash.example.com/app/' }).corsOrigins).toEqual(['https://dash.example.com']);
    expect(loadConfig({ CORS_ORIGINS: ' https://a.example , http://localhost:5173,http://127.0.0.1:8080' }).corsOrigins).toEqual([
      'https://a.example',
      'http://localhost:5173',
      'http://127.0.0.1:8080',
    ]);
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toBe('*');
  });

  it.each(['localhost:5173', 'http://localhost:5173/', 'https://a.example/app', 'https://A.example', 'https://a.example:443', '*, https://a.example', 'https://a.example,', 'ftp://a.example', 'null'])(
    'refuses CORS_ORIGINS=%j in one line naming the variable',
    (value) => {
      expect(() => loadConfig({ CORS_ORIGINS: value })).toThrow(/^invalid configuration: CORS_ORIGINS: "[^"\n]*" is not an origin \(scheme:\/\/host\[:port\], lower case, no path; or \* alone\)$/);
    },
  );

  it('reads the seed nodes of a Redis Cluster, and refuses them beside REDIS_URL with one line naming both', () => {
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'redis://127.0.0.1:7000, redis://127.0.0.1:7001' })).toMatchObject({ redisUrl: undefined, redisClusterNodes: ['redis://127.0.0.1:7000', 'redis://127.0.0.1:7001'] });
    expect(() => loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_CLUSTER_NODES: 'redis://127.0.0.1:7000' })).toThrow(
      /^invalid configuration: REDIS_CLUSTER_NODES: set either REDIS_URL \(one Redis\) or REDIS_CLUSTER_NODES \(a Redis Cluster\), not both$/,
    );
  });

  it('refuses a previous service secret without a current one', () => {
    expect(() => loadConfig({ SERVICE_JWT_SECRET_PREVIOUS: 'p'.repeat(32) })).toThrow(
      'invalid configuration: SERVICE_JWT_SECRET_PREVIOUS: set only beside SERVICE_JWT_SECRET (the secret rotated to)',
    );
    expect(loadConfig({ SERVICE_JWT_SECRET: 's'.repeat(32), SERVICE_JWT_SECRET_PREVIOUS: 'p'.repeat(32) })).toMatchObject({ serviceJwtPreviousSecret: 'p'.repeat(32) });
  });

  it('refuses the development issuer in production', () => {
    expect(() => loadConfig({ DEV_IDENTITY: '1', NODE_ENV: 'production' })).toThrow('invalid configuration: DEV_IDENTITY: the development issuer is refused when NODE_ENV=production');
  });

  describe('control signing key', () => {
    const pem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

    it('refuses to start in production without CONTROL_SIGNING_KEY, naming the variable in one line', () => {
      expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
        new ConfigError('invalid configuration: CONTROL_SIGNING_KEY: required when NODE_ENV=production (an Ed25519 private key, PKCS#8 PEM)'),
      );
      expect(loadConfig({ NODE_ENV: 'production', CONTROL_SIGNING_KEY: pem() }).controlSigningKey).toMatch(/^-----BEGIN PRIVATE KEY-----/);
      expect(loadConfig({}).controlSigningKey).toBeUndefined();
    });

    it('refuses a key that is not Ed25519 PKCS#8 PEM without echoing it', () => {
      const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
      for (const value of [rsa, 'not a key']) {
        expect(() => loadConfig({ CONTROL_SIGNING_KEY: value })).toThrow(new ConfigError('invalid configuration: CONTROL_SIGNING_KEY: must be an Ed25519 private key in PKCS#8 PEM'));
      }
    });

    it('accepts escaped newlines, and a previous key only beside a current one', () => {
      const current = pem();
      const previous = pem();
      expect(loadConfig({ CONTROL_SIGNING_KEY: current.replace(/\n/g, '\\n'), CONTROL_SIGNING_KEY_PREVIOUS: previous })).toMatchObject({
        controlSigningKey: current,
        controlSigningKeyPrevious: previous,
      });
      expect(() => loadConfig({ CONTROL_SIGNING_KEY_PREVIOUS: previous })).toThrow(
        'invalid configuration: CONTROL_SIGNING_KEY_PREVIOUS: set only beside CONTROL_SIGNING_KEY (the key rotated to)',
      );
    });

    it('accepts a next key only beside a current one, and checks it like the others', () => {
      const [current, next] = [pem(), pem()];
      expect(loadConfig({ CONTROL_SIGNING_KEY: current, CONTROL_SIGNING_KEY_NEXT: next })).toMatchObject({ controlSigningKey: current, controlSigningKeyNext: next });
      expect(() => loadConfig({ CONTROL_SIGNING_KEY_NEXT: next })).toThrow('invalid configuration: CONTROL_SIGNING_KEY_NEXT: set only beside CONTROL_SIGNING_KEY (the key that still signs)');
      expect(() => loadConfig({ CONTROL_SIGNING_KEY: current, CONTROL_SIGNING_KEY_NEXT: 'not a key' })).toThrow(
        'invalid configuration: CONTROL_SIGNING_KEY_NEXT: must be an Ed25519 private key in PKCS#8 PEM',
      );
    });
  });
});
