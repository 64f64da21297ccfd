import { ArgumentsHost, InternalServerErrorException, Logger, NotFoundException, ServiceUnavailableException } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ApiError, ServiceError } from 'src/common/http/errors';
import { ApiExceptionFilter } from 'src/platform/http/exception.filter';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { AppConfig } from 'src/config/config';

const metrics = new MetricsService({} as AppConfig);

/** What the filter answers and logs for one thrown value (`routeTemplate`: as the authentication guard records it). */
function run(exception: unknown, routeTemplate?: string) {
  const replies: [unknown, number][] = [];
  const host = { httpAdapter: { reply: (_res: unknown, body: unknown, status: number) => replies.push([body, status]) } } as unknown as HttpAdapterHost;
  const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  const request = { raw: { routeTemplate } };
  new ApiExceptionFilter(host, metrics).catch(exception, { switchToHttp: () => ({ getResponse: () => ({}), getRequest: () => request }) } as unknown as ArgumentsHost);
  const logged = { error: error.mock.calls.map((c) => c[0]), warn: warn.mock.calls.map((c) => c[0]) };
  jest.restoreAllMocks();
  return { status: replies[0][1], body: replies[0][0], logged };
}

const INTERNAL = { error: { code: 'internal_error', message: 'internal server error' } };

describe('ApiExceptionFilter', () => {
  it('answers a thrown 5xx HttpException as a plain Error: internal_error, logged with kind, status and frames', () => {
    for (const exception of [new InternalServerErrorException(), new ServiceUnavailableException('upstream said no')]) {
      const { status, body, logged } = run(exception);
      expect([status, body]).toEqual([500, INTERNAL]);
      expect(logged.error).toEqual([{ msg: 'unhandled error', error: exception.constructor.name, status: exception.getStatus(), stack: expect.stringMatching(/^\s*at /) }]);
    }
  });

  it('logs a database error by kind and driver code, never its message', () => {
    const database = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00 (value sk-live-secret)'), { code: '22021' });
    const { status, body, logged } = run(database);
    expect([status, body]).toEqual([500, INTERNAL]);
    expect(logged.error).toEqual([expect.objectContaining({ msg: 'unhandled error', error: 'Error', code: '22021' })]);
    expect(JSON.stringify(logged)).not.toContain('secret');
  });

  it('keeps the body of a 5xx the specification names, and logs it by kind and code', () => {
    const unavailable = run(new ApiError(503, 'Observe read model unavailable'));
    expect([unavailable.status, unavailable.body, unavailable.logged]).toEqual([
      503,
      { detail: 'Observe read model unavailable' },
      { error: [], warn: [{ msg: 'service answered 5xx', status: 503, error: 'ApiError' }] },
    ]);
    const upstream = run(new ServiceError(502, 'upstream_error', 'gateway call failed'));
    expect([upstream.status, upstream.body, upstream.logged.warn]).toEqual([502, { error: { code: 'upstream_error', message: 'gateway call failed' } }, [{ msg: 'service answered 5xx', status: 502, error: 'ServiceError', code: 'upstream_error' }]]);
  });

  it("answers the framework's 4xx in the detail shape with a fixed text, logging nothing", () => {
    const { status, body, logged } = run(new NotFoundException('Cannot GET /x'));
    expect([status, body, logged]).toEqual([404, { detail: 'Not Found' }, { error: [], warn: [] }]);
  });

  describe('a database that is unavailable', () => {
    const driver = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});
    // What TypeORM throws around the driver's error: its message and code copied, the original kept.
    const typeorm = (error: Error) => Object.assign(new Error(error.message), { name: 'QueryFailedError', code: (error as { code?: string }).code, driverError: error });
    const cases: [string, unknown, string][] = [
      ['connection refused', driver('connect ECONNREFUSED 10.0.0.7:5432', 'ECONNREFUSED'), 'unreachable'],
      ['refused on every address', Object.assign(new AggregateError([driver('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED')]), { code: 'ECONNREFUSED' }), 'unreachable'],
      ['connection reset', typeorm(driver('read ECONNRESET', 'ECONNRESET')), 'connection_lost'],
      ['connection terminated', typeorm(driver('Connection terminated unexpectedly')), 'connection_lost'],
      ['a lost client used again', typeorm(driver('Client has encountered a connection error and is not queryable')), 'connection_lost'],
      ['57P01 admin shutdown', typeorm(driver('terminating connection due to administrator command', '57P01')), 'shutdown'],
      ['57P02 crash shutdown', driver('terminating connection because of crash of another server process', '57P02'), 'shutdown'],
      ['57P03 cannot connect now', driver('the database system is starting up', '57P03'), 'shutdown'],
      ['08006 connection failure', driver('connection failure', '08006'), 'connection_lost'],
      ['pool acquisition timeout', driver('timeout exceeded when trying to connect'), 'timeout'],
      ['connect timeout', Object.assign(driver('Connection terminated due to connection timeout'), { cause: driver('Connection terminated unexpectedly') }), 'timeout'],
      ['statement timeout', typeorm(driver('canceling statement due to statement timeout', '57014')), 'timeout'],
      ['read bound', typeorm(driver('database answer exceeded its bound', 'DATABASE_READ_TIMEOUT')), 'timeout'],
    ];

    it.each(cases)('answers %s 503 database_unavailable, counted and logged once with its cause, never the driver text', async (_name, exception, cause) => {
      const before = (await metrics.databaseUnavailable.get()).values.find((v) => v.labels.cause === cause)?.value ?? 0;
      const { status, body, logged } = run(exception, '/api/v1/workspaces/:ws/keys');
      expect([status, body]).toEqual([503, { error: { code: 'database_unavailable', message: 'database unavailable' } }]);
      expect(logged.error).toEqual([]);
      expect(logged.warn).toEqual([expect.objectContaining({ msg: 'database unavailable', cause, status: 503, route: '/api/v1/workspaces/:ws/keys' })]);
      expect(JSON.stringify(logged)).not.toMatch(/10\.0\.0\.7|administrator|terminating|canceling|exceeded/);
      expect((await metrics.databaseUnavailable.get()).values.find((v) => v.labels.cause === cause)?.value).toBe(before + 1);
    });

    it('answers the usage and audit routes in their own shape, Observe read model unavailable', () => {
      for (const route of ['/api/v1/workspaces/:ws/usage', '/api/v1/workspaces/:ws/audit', '/api/v1/workspaces/:ws/audit/export']) {
        expect(run(driver('read ECONNRESET', 'ECONNRESET'), route)).toMatchObject({ status: 503, body: { detail: 'Observe read model unavailable' } });
      }
      expect(run(driver('read ECONNRESET', 'ECONNRESET'), '/api/v1/workspaces/:ws/usagex')).toMatchObject({ body: { error: { code: 'database_unavailable' } } });
      // Before any guard recorded a route: the envelope.
      expect(run(driver('read ECONNRESET', 'ECONNRESET'))).toMatchObject({ status: 503, body: { error: { code: 'database_unavailable' } } });
    });

    it('leaves every other database error a 500', () => {
      for (const code of ['23505', '22021', '40P01', '42P01', '25P02']) expect(run(typeorm(driver('x', code))).status).toBe(500);
      expect(run(new Error('Connection terminated by a bug elsewhere')).status).toBe(500);
    });
  });
});
