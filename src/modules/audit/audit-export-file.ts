import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Jwks } from 'src/common/signing/jws';
import { ChainVerifier, VerifySummary } from 'src/modules/audit/audit-verifier';
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
      throw new Error(`${path}: line ${n} is not JSON`);
    }
    if (!isJsonObject(value)) throw new Error(`${path}: line ${n} is not a JSON object`);
    yield { n, value };
  }
}

/** A checkpoint line is `{"checkpoint": "<jws>"}` and nothing else (so is a `retired_keys` line); anything else there fails as a bad signature. */
const only = (value: Record<string, unknown>, member: string) => (Object.keys(value).length === 1 ? value[member] : null);
const isSignedLine = (value: Record<string, unknown>) => 'checkpoint' in value || 'retired_keys' in value;

export interface ExportFileOptions {
  /** Files holding checkpoints kept from earlier exports (an earlier export itself, or an anchor file). */
  keptCheckpoints?: string[];
  allowUnsignedTail?: boolean;
}

/** The workspace of the trail: its first row's (rows come first in an export); undefined when it has none. */
async function trailWorkspace(path: string): Promise<string | undefined> {
  for await (const { value } of lines(path)) {
    if (isSignedLine(value)) continue;
    return typeof value.workspace_id === 'string' ? value.workspace_id : undefined;
  }
  return undefined;
}

/**
 * Verifies an export file offline in passes with bounded memory: the retired keys, then the
 * checkpoint lines (they come last in the file), then those of the kept files that name the
 * trail's workspace, then the rows in order (docs/audit.md, "Verifying").
 */
export async function verifyExportFile(path: string, keys: Jwks, options: ExportFileOptions = {}): Promise<VerifySummary> {
  const verifier = new ChainVerifier(keys, { workspaceId: await trailWorkspace(path), allowUnsignedTail: options.allowUnsignedTail });
  for await (const { value } of lines(path, '"retired_keys"')) {
    if ('retired_keys' in value) verifier.retiredKeys(only(value, 'retired_keys'));
  }
  for await (const { value } of lines(path, '"checkpoint"')) {
    if ('checkpoint' in value) verifier.checkpoint(only(value, 'checkpoint'));
  }
  for (const kept of options.keptCheckpoints ?? []) {
    for await (const { value } of lines(kept, '"checkpoint"')) {
      if ('checkpoint' in value) verifier.checkpoint(only(value, 'checkpoint'), true);
    }
  }
  for await (const { value } of lines(path)) {
    if (!isSignedLine(value)) verifier.row(value);
  }
  return verifier.finish();
}
