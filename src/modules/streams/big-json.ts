import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { randomBytes } from 'node:crypto';
import { map, Observable } from 'rxjs';

const LONG_DIGITS = /\d{16}/;

/**
 * JSON.parse that loses no integer: an integer literal beyond 2^53 becomes a decimal string
 * (readers turn it into a bigint) instead of a rounded number. Strings are skipped as a whole.
 */
export function parseJsonLossless(text: string): unknown {
  // No run of 16 digits anywhere (strings included): no integer can exceed 2^53, parse as is.
  if (!LONG_DIGITS.test(text)) return JSON.parse(text);
  let out = '';
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i++;
      while (i < text.length && text.charCodeAt(i) !== 0x22) i += text.charCodeAt(i) === 0x5c ? 2 : 1;
      i++;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      while (i < text.length && /[-+.eE0-9]/.test(text[i])) i++;
      const token = text.slice(start, i);
      if (/^-?\d{16,}$/.test(token) && !Number.isSafeInteger(Number(token))) {
        out += `${text.slice(copied, start)}"${token}"`;
        copied = i;
      }
    } else {
      i++;
    }
  }
  return JSON.parse(out + text.slice(copied));
}

/** JSON.stringify that writes a bigint as an exact JSON integer. */
export function stringifyJson(value: unknown): string {
  const mark = `big${randomBytes(8).toString('hex')}:`;
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${mark}${v.toString()}` : v));
  return text.replace(new RegExp(`"${mark}(-?\\d+)"`, 'g'), '$1');
}

/** Serializes a handler's document with `stringifyJson`, so bigint totals reach the wire exactly. */
@Injectable()
export class BigJsonInterceptor implements NestInterceptor {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const response = context.switchToHttp().getResponse();
    return next.handle().pipe(
      map((document: unknown) => {
        this.adapterHost.httpAdapter.setHeader(response, 'Content-Type', 'application/json; charset=utf-8');
        return stringifyJson(document);
      }),
    );
  }
}
