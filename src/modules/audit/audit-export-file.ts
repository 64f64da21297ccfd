import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Jwks } from 'src/common/signing/jws';
import { ChainVerifier, ExportedRow, VerifySummary } from 'src/modules/audit/audit-verifier';
import { isJsonObject } from 'src/common/json/json';

/** The file's JSON objects; with `only`, just the lines containing that text are parsed. */
async function* lines(path: string, only?: string): AsyncGenerator<{ n: number; value: Record<string, unknown> }> {
  let n = 0;
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
    n += 1;
    if (line.trim() === '' || (only !== undefined && !line.includes(only))) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new Error(`line ${n} is not JSON`);
    }
    if (!isJsonObject(value)) throw new Error(`line ${n} is not a JSON object`);
    yield { n, value };
  }
}

/**
 * Verifies an export file offline in two passes with bounded memory: the checkpoint lines first
 * (they come last in the file), then the rows in order (docs/audit.md, "Verifying").
 */
export async function verifyExportFile(path: string, keys: Jwks): Promise<VerifySummary> {
  const verifier = new ChainVerifier(keys);
  for await (const { value } of lines(path, '"checkpoint"')) {
    if ('checkpoint' in value) verifier.checkpoint(String(value.checkpoint));
  }
  for await (const { value } of lines(path)) {
    if (!('checkpoint' in value)) verifier.row(value as unknown as ExportedRow);
  }
  return verifier.finish();
}
