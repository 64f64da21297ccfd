import { checkObservations, loadDocument, OBSERVATIONS_DIR } from './observed-responses';

/** The parts of Jest 29's global configuration that narrow a run to some suites or tests. */
interface RunFilters {
  testPathPattern?: string;
  testNamePattern?: string;
  onlyChanged?: boolean;
  findRelatedTests?: boolean;
  changedSince?: string;
  shard?: unknown;
}

/**
 * The e2e project's teardown: fails the run when a response the suites saw is not what
 * docs/openapi.json documents, and, when every suite ran, when a documented status was never seen.
 */
export default function globalTeardown(config: RunFilters, project: { testPathIgnorePatterns: string[] }): void {
  const dir = process.env[OBSERVATIONS_DIR];
  if (!dir) return;
  const narrowed = config.testPathPattern || config.testNamePattern || config.onlyChanged || config.findRelatedTests || config.changedSince || config.shard;
  const everySuite = !narrowed && project.testPathIgnorePatterns.every((p) => p === '/node_modules/');
  const failures = checkObservations(loadDocument(), dir, everySuite);
  if (failures.length > 0) {
    throw new Error(`The OpenAPI document (docs/openapi.json) and the responses the e2e suites saw disagree:\n${failures.map((f) => `  ${f}`).join('\n')}`);
  }
}
