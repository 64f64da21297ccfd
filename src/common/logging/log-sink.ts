/** Bytes of buffered lines after which they are written at once rather than at the end of the event-loop turn. */
const FLUSH_BYTES = 64 * 1024;
let buffer = '';
let scheduled = false;

/**
 * Where log lines go: stdout, in batches. A line is appended to a buffer that is written in one
 * `write` at the end of the current event-loop turn (`setImmediate`, after the responses of that
 * turn went out), or at once past FLUSH_BYTES; under load one write carries the lines of many
 * requests instead of a system call each (bench/README.md, docs/decisions.md). Flushed on exit.
 */
export function writeLine(line: string): void {
  buffer += line;
  if (buffer.length >= FLUSH_BYTES) flushLines();
  else if (!scheduled) {
    scheduled = true;
    setImmediate(flushLines);
  }
}

/** Writes what is buffered now; also before any line written directly, so lines keep their order. */
export function flushLines(): void {
  scheduled = false;
  if (buffer.length === 0) return;
  const lines = buffer;
  buffer = '';
  process.stdout.write(lines);
}

process.on('exit', flushLines);
