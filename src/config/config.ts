import 'reflect-metadata';
import { plainToInstance, Transform } from 'class-transformer';
import type { CorsOrigins } from 'src/common/http/cors';
import { ed25519PrivateKey } from 'src/common/signing/jws';
import { IsIn, IsInt, IsOptional, IsString, IsUrl, Matches, Max, Min, MinLength, validateSync } from 'class-validator';

const urlOptions = { require_tld: false, require_protocol: true, protocols: ['http', 'https'] };
const toInt = ({ value }: { value: unknown }) => (value === undefined || value === '' ? undefined : Number(value));

/** The HTTP adapters `createApp` can build on: Express by default, Fastify for throughput (bench/README.md). */
export const HTTP_PLATFORMS = ['express', 'fastify'] as const;
export type HttpPlatform = (typeof HTTP_PLATFORMS)[number];

/** Every variable of CONTRACT.md section 1; validated once at boot. */
class EnvironmentVariables {
  @IsOptional() @Transform(toInt) @IsInt() @Min(0) @Max(65535) PORT?: number;
  @IsOptional() @IsString() HOST?: string;
  @IsOptional() @IsIn(HTTP_PLATFORMS, { message: `must be one of ${HTTP_PLATFORMS.join(', ')}` }) HTTP_PLATFORM?: string;
  @IsOptional() @IsString() @MinLength(1) DATABASE_URL?: string;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(200) DATABASE_POOL_SIZE?: number;
  @IsOptional() @Transform(toInt) @IsInt() @Min(100) @Max(600_000) DATABASE_CONNECT_TIMEOUT_MS?: number;
  @IsOptional() @Transform(toInt) @IsInt() @Min(100) @Max(3_600_000) DATABASE_STATEMENT_TIMEOUT_MS?: number;
  @IsOptional() @IsString() PGLITE_DIR?: string;
  @IsOptional() @IsString() REDIS_URL?: string;
  @IsOptional() @Matches(/^\s*rediss?:\/\/[^\s,]+\s*(,\s*rediss?:\/\/[^\s,]+\s*)*$/, { message: 'must be a comma-separated list of redis:// URLs (seed nodes)' }) REDIS_CLUSTER_NODES?: string;
  @IsOptional() @IsString() @MinLength(1) REDIS_PREFIX?: string;
  @IsOptional() @IsUrl(urlOptions) IDENTITY_ISSUER?: string;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) IDENTITY_JWKS_TTL_S?: number;
  @IsOptional() @IsString() IDENTITY_AUTHORIZED_PARTIES?: string;
  @IsOptional() @IsString() @MinLength(32) SERVICE_JWT_SECRET?: string;
  @IsOptional() @IsString() @MinLength(32) SERVICE_JWT_SECRET_PREVIOUS?: string;
  @IsOptional() @IsUrl(urlOptions) GATEWAY_URL?: string;
  @IsOptional() @IsUrl(urlOptions) GATEWAY_PUBLIC_URL?: string;
  @IsOptional() @IsUrl(urlOptions) PUBLIC_URL?: string;
  @IsOptional() @IsUrl(urlOptions) WEB_URL?: string;
  @IsOptional() @IsString() CORS_ORIGINS?: string;
  @IsOptional() @IsString() OAUTH_DEFAULT_CLIENT_ID?: string;
  @IsOptional() @IsUrl(urlOptions) ORCHESTRATOR_URL?: string;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(64) POLICY_COMPILER_CONCURRENCY?: number;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(600000) POLICY_COMPILE_TIMEOUT_MS?: number;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) APPROVAL_TTL_S?: number;
  @IsOptional() @IsIn(['0', '1']) DEV_IDENTITY?: string;
  @IsOptional() @IsIn(['debug', 'info', 'warn', 'error']) LOG_LEVEL?: string;
  @IsOptional() @Matches(/^([A-Za-z0-9.-]*|\[[0-9a-fA-F:]+\]):\d{1,5}$/, { message: 'must be host:port or :port' }) METRICS_ADDR?: string;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(1200) READ_MODEL_RETENTION_MONTHS?: number;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) READY_STREAM_BACKLOG_MAX?: number;
  @IsOptional() @Transform(toInt) @IsInt() @Min(65_536) @Max(1_073_741_824) STREAM_BATCH_MAX_BYTES?: number;
  @IsOptional() @IsString() CONTROL_SIGNING_KEY?: string;
  @IsOptional() @IsString() CONTROL_SIGNING_KEY_PREVIOUS?: string;
  @IsOptional() @IsString() CONTROL_SIGNING_KEY_NEXT?: string;
  @IsOptional() @IsString() @MinLength(1) AUDIT_ANCHOR_FILE?: string;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(36500) KEY_IDLE_DAYS?: number;
  @IsOptional() @IsIn(['0', '1']) NOTIFY_ALLOW_HTTP?: string;
  @IsOptional() @IsIn(['0', '1']) NOTIFY_ALLOW_PRIVATE_TARGETS?: string;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(600000) NOTIFY_TIMEOUT_MS?: number;
  @IsOptional() @Matches(/^\d{1,7}(,\d{1,7}){0,31}$/, { message: 'must be a comma-separated list of whole seconds' }) NOTIFY_RETRY_SCHEDULE_S?: string;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) NOTIFY_DISABLE_AFTER_S?: number;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(3650) NOTIFY_RETENTION_DAYS?: number;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) NOTIFY_APPROVAL_EXPIRING_S?: number;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(3650) NOTIFY_KEY_EXPIRING_DAYS?: number;
  @IsOptional() @IsString() NODE_ENV?: string;
}

export interface AppConfig {
  port: number;
  host: string;
  httpPlatform: HttpPlatform;
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** Longest wait for a new connection's handshake, and for a pooled connection to come free. */
  databaseConnectTimeoutMs: number;
  /** The server's statement_timeout of every session; the client gives up on an answer READ_MARGIN_MS later. */
  databaseStatementTimeoutMs: number;
  pgliteDir: string;
  redisUrl: string | undefined;
  /** Seed nodes of a Redis Cluster (`redis://host:port` each); set instead of redisUrl, never beside it. */
  redisClusterNodes: string[] | undefined;
  redisPrefix: string;
  /** Verbatim, as the `iss` claim must read (a trailing `/` included). */
  identityIssuer: string | undefined;
  /** `{IDENTITY_ISSUER without trailing /}/.well-known/jwks.json`. */
  identityJwksUri: string | undefined;
  jwksTtlSeconds: number;
  authorizedParties: string[];
  serviceJwtSecret: string | undefined;
  /** Still accepted on inbound service tokens while a rotation is under way; never used to sign. */
  serviceJwtPreviousSecret: string | undefined;
  gatewayUrl: string;
  gatewayPublicUrl: string;
  publicUrl: string;
  webUrl: string;
  /** Origins a browser may call the operator API from (src/common/http/cors.ts). */
  corsOrigins: CorsOrigins;
  oauthDefaultClientId: string | undefined;
  /** Worker orchestration service; unset = runs are refused with a typed 503. */
  orchestratorUrl: string | undefined;
  policyCompilerConcurrency: number;
  /** Longest one compile may run before its worker is terminated (`policy_compiler_unavailable`). */
  policyCompileTimeoutMs: number;
  approvalTtlSeconds: number;
  devIdentity: boolean;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  metricsAddr: { host: string; port: number } | undefined;
  /** Whole calendar months of receipts and usage kept before their partitions are dropped. */
  readModelRetentionMonths: number;
  /** Most entries pending (delivered, not acknowledged) in one gateway stream before /readyz answers 503. */
  readyStreamBacklogMax: number;
  /** Most bytes of stream entry data one consumer pass admits (the entry that reaches it is the last). */
  streamBatchMaxBytes: number;
  /** Control's Ed25519 signing key (PKCS#8 PEM); unset = generated once and kept in the database (never in production). */
  controlSigningKey: string | undefined;
  /** The key rotated from: its signatures still verify and it stays in the published JWKS; never signs. */
  controlSigningKeyPrevious: string | undefined;
  /** The key about to be rotated to: published in the JWKS (and its cursors accepted) before any replica signs with it; never signs. */
  controlSigningKeyNext: string | undefined;
  /** A file each audit checkpoint is appended to before it is kept (an anchor the database writer cannot rewrite); unset = none. */
  auditAnchorFile: string | undefined;
  /** Days without a usage event after which a key reads `idle: true`. */
  keyIdleDays: number;
  /** Operator notifications (CONTRACT.md section 7). */
  notify: NotifyConfig;
}

export interface NotifyConfig {
  allowHttp: boolean;
  allowPrivateTargets: boolean;
  timeoutMs: number;
  /** Seconds to wait after the n-th failed attempt (1-based: index n - 1); its length + 1 attempts in all. */
  retryScheduleSeconds: number[];
  disableAfterSeconds: number;
  retentionDays: number;
  approvalExpiringSeconds: number;
  keyExpiringDays: number;
}

export const APP_CONFIG = Symbol('APP_CONFIG');

/** Longest a single policy compile may run before its worker is terminated. */
export const DEFAULT_POLICY_COMPILE_TIMEOUT_MS = 10_000;

/** 64 MiB: above a full pass of typical entries (20,000 receipts of ~1 KB), so the entry limit binds first. */
export const DEFAULT_STREAM_BATCH_MAX_BYTES = 67_108_864;

export class ConfigError extends Error {}

/** `host:port` or `:port` (all interfaces). */
function parseAddress(text: string): { host: string; port: number } {
  const at = text.lastIndexOf(':');
  const host = text.slice(0, at).replace(/^\[|\]$/g, '');
  return { host: host || '0.0.0.0', port: Number(text.slice(at + 1)) };
}

/** A PEM from the environment (`\\n` accepted for newlines), refused unless it is an Ed25519 PKCS#8 private key. */
function signingKeyVariable(name: string, value: string | undefined): string | undefined {
  if (!value) return undefined;
  const pem = value.replace(/\\n/g, '\n');
  try {
    ed25519PrivateKey(pem);
  } catch {
    throw new ConfigError(`invalid configuration: ${name}: must be an Ed25519 private key in PKCS#8 PEM`);
  }
  return pem;
}

const trimSlash = (url: string) => url.replace(/\/+$/, '');

/**
 * `CORS_ORIGINS`: `*`, or comma-separated origins exactly as a browser sends them in `Origin`
 * (`https://dashboard.example.com`, `http://localhost:5173`: scheme, host, port only); unset, the origin of WEB_URL.
 */
function corsOriginsVariable(value: string | undefined, webUrl: string): CorsOrigins {
  if (value === undefined) return [new URL(webUrl).origin];
  if (value.trim() === '*') return '*';
  const origins = value.split(',').map((entry) => entry.trim());
  const bad = origins.find((entry) => !/^https?:\/\//.test(entry) || !URL.canParse(entry) || new URL(entry).origin !== entry);
  if (bad !== undefined) {
    throw new ConfigError(`invalid configuration: CORS_ORIGINS: ${JSON.stringify(bad)} is not an origin (scheme://host[:port], lower case, no path; or * alone)`);
  }
  return origins;
}

/** Reads and validates the environment; throws a ConfigError whose message is one line naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const vars = plainToInstance(EnvironmentVariables, present);
  const errors = validateSync(vars, { skipMissingProperties: false, forbidUnknownValues: false });
  if (errors.length > 0) {
    const first = errors[0];
    throw new ConfigError(`invalid configuration: ${first.property}: ${Object.values(first.constraints ?? {})[0] ?? 'invalid value'}`);
  }
  const devIdentity = vars.DEV_IDENTITY === '1';
  if (devIdentity && vars.NODE_ENV === 'production') {
    throw new ConfigError('invalid configuration: DEV_IDENTITY: the development issuer is refused when NODE_ENV=production');
  }
  if (vars.SERVICE_JWT_SECRET_PREVIOUS && !vars.SERVICE_JWT_SECRET) {
    throw new ConfigError('invalid configuration: SERVICE_JWT_SECRET_PREVIOUS: set only beside SERVICE_JWT_SECRET (the secret rotated to)');
  }
  const signingKey = signingKeyVariable('CONTROL_SIGNING_KEY', vars.CONTROL_SIGNING_KEY);
  const previousSigningKey = signingKeyVariable('CONTROL_SIGNING_KEY_PREVIOUS', vars.CONTROL_SIGNING_KEY_PREVIOUS);
  if (!signingKey && vars.NODE_ENV === 'production') {
    throw new ConfigError('invalid configuration: CONTROL_SIGNING_KEY: required when NODE_ENV=production (an Ed25519 private key, PKCS#8 PEM)');
  }
  if (previousSigningKey && !signingKey) {
    throw new ConfigError('invalid configuration: CONTROL_SIGNING_KEY_PREVIOUS: set only beside CONTROL_SIGNING_KEY (the key rotated to)');
  }
  const nextSigningKey = signingKeyVariable('CONTROL_SIGNING_KEY_NEXT', vars.CONTROL_SIGNING_KEY_NEXT);
  if (nextSigningKey && !signingKey) {
    throw new ConfigError('invalid configuration: CONTROL_SIGNING_KEY_NEXT: set only beside CONTROL_SIGNING_KEY (the key that still signs)');
  }
  if (vars.REDIS_URL && vars.REDIS_CLUSTER_NODES) {
    throw new ConfigError('invalid configuration: REDIS_CLUSTER_NODES: set either REDIS_URL (one Redis) or REDIS_CLUSTER_NODES (a Redis Cluster), not both');
  }
  const port = vars.PORT ?? 3000;
  const gatewayUrl = trimSlash(vars.GATEWAY_URL ?? 'http://127.0.0.1:8080');
  const webUrl = trimSlash(vars.WEB_URL ?? 'http://localhost:5173');
  return {
    port,
    host: vars.HOST ?? '0.0.0.0',
    httpPlatform: (vars.HTTP_PLATFORM as HttpPlatform | undefined) ?? 'express',
    databaseUrl: vars.DATABASE_URL,
    databasePoolSize: vars.DATABASE_POOL_SIZE ?? 10,
    databaseConnectTimeoutMs: vars.DATABASE_CONNECT_TIMEOUT_MS ?? 3000,
    databaseStatementTimeoutMs: vars.DATABASE_STATEMENT_TIMEOUT_MS ?? 5000,
    pgliteDir: vars.PGLITE_DIR ?? '.data/pglite',
    redisUrl: vars.REDIS_URL,
    redisClusterNodes: vars.REDIS_CLUSTER_NODES?.split(',').map((node) => node.trim()),
    redisPrefix: vars.REDIS_PREFIX ?? 'ob',
    identityIssuer: vars.IDENTITY_ISSUER || undefined,
    identityJwksUri: vars.IDENTITY_ISSUER ? `${trimSlash(vars.IDENTITY_ISSUER)}/.well-known/jwks.json` : undefined,
    jwksTtlSeconds: vars.IDENTITY_JWKS_TTL_S ?? 600,
    authorizedParties: (vars.IDENTITY_AUTHORIZED_PARTIES ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    serviceJwtSecret: vars.SERVICE_JWT_SECRET,
    serviceJwtPreviousSecret: vars.SERVICE_JWT_SECRET_PREVIOUS,
    gatewayUrl,
    gatewayPublicUrl: trimSlash(vars.GATEWAY_PUBLIC_URL ?? gatewayUrl),
    publicUrl: trimSlash(vars.PUBLIC_URL ?? `http://localhost:${port}`),
    webUrl,
    corsOrigins: corsOriginsVariable(vars.CORS_ORIGINS, webUrl),
    oauthDefaultClientId: vars.OAUTH_DEFAULT_CLIENT_ID || undefined,
    orchestratorUrl: vars.ORCHESTRATOR_URL ? trimSlash(vars.ORCHESTRATOR_URL) : undefined,
    policyCompilerConcurrency: vars.POLICY_COMPILER_CONCURRENCY ?? 2,
    policyCompileTimeoutMs: vars.POLICY_COMPILE_TIMEOUT_MS ?? DEFAULT_POLICY_COMPILE_TIMEOUT_MS,
    approvalTtlSeconds: vars.APPROVAL_TTL_S ?? 900,
    devIdentity,
    logLevel: (vars.LOG_LEVEL as AppConfig['logLevel']) ?? 'info',
    metricsAddr: vars.METRICS_ADDR ? parseAddress(vars.METRICS_ADDR) : undefined,
    readModelRetentionMonths: vars.READ_MODEL_RETENTION_MONTHS ?? 13,
    readyStreamBacklogMax: vars.READY_STREAM_BACKLOG_MAX ?? 100_000,
    streamBatchMaxBytes: vars.STREAM_BATCH_MAX_BYTES ?? DEFAULT_STREAM_BATCH_MAX_BYTES,
    controlSigningKey: signingKey,
    controlSigningKeyPrevious: previousSigningKey,
    controlSigningKeyNext: nextSigningKey,
    auditAnchorFile: vars.AUDIT_ANCHOR_FILE,
    keyIdleDays: vars.KEY_IDLE_DAYS ?? 90,
    notify: {
      allowHttp: vars.NOTIFY_ALLOW_HTTP === '1',
      allowPrivateTargets: vars.NOTIFY_ALLOW_PRIVATE_TARGETS === '1',
      timeoutMs: vars.NOTIFY_TIMEOUT_MS ?? 15_000,
      retryScheduleSeconds: (vars.NOTIFY_RETRY_SCHEDULE_S ?? '5,300,1800,7200,18000,36000,36000').split(',').map(Number),
      disableAfterSeconds: vars.NOTIFY_DISABLE_AFTER_S ?? 432_000,
      retentionDays: vars.NOTIFY_RETENTION_DAYS ?? 30,
      approvalExpiringSeconds: vars.NOTIFY_APPROVAL_EXPIRING_S ?? 120,
      keyExpiringDays: vars.NOTIFY_KEY_EXPIRING_DAYS ?? 7,
    },
  };
}
