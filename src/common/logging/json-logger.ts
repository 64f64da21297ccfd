import { LoggerService } from '@nestjs/common';
import { flushLines } from 'src/common/logging/log-sink';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;
type Level = keyof typeof LEVELS;

/** One JSON object per line on stdout. Callers pass structured fields, never tokens or bodies. */
export class JsonLogger implements LoggerService {
  constructor(private readonly minimum: Level = 'info') {}

  log(message: unknown, context?: string) {
    this.write('info', message, context);
  }
  error(message: unknown, ...rest: unknown[]) {
    this.write('error', message, rest.find((r) => typeof r === 'string') as string | undefined);
  }
  warn(message: unknown, context?: string) {
    this.write('warn', message, context);
  }
  debug(message: unknown, context?: string) {
    this.write('debug', message, context);
  }
  verbose(message: unknown, context?: string) {
    this.write('debug', message, context);
  }

  private write(level: Level, message: unknown, context?: string) {
    if (LEVELS[level] < LEVELS[this.minimum]) return;
    const fields = typeof message === 'object' && message !== null ? (message as Record<string, unknown>) : { msg: String(message) };
    // After the access lines buffered before it (src/common/logging/log-sink.ts); these lines are rare.
    flushLines();
    process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level, context, ...fields })}\n`);
  }
}
