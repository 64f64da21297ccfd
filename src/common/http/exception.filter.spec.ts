import { ArgumentsHost, InternalServerErrorException, Logger, NotFoundException, ServiceUnavailableException } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ApiError, ServiceError } from 'src/common/http/errors';
import { ApiExceptionFilter } from 'src/common/http/exception.filter';

/** What the filter answers and logs for one thrown value. */
function run(exception: unknown) {
  const replies: [unknown, number][] = [];
  const host = { httpAdapter: { reply: (_res: unknown, body: unknown, status: number) => replies.push([body, status]) } } as unknown as HttpAdapterHost;
  const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  new ApiExceptionFilter(host).catch(exception, { switchToHttp: () => ({ getResponse: () => ({}) }) } as unknown as ArgumentsHost);
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
});
