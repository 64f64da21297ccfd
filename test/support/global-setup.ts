import { createObservationsDir, OBSERVATIONS_DIR } from './observed-responses';

/** The e2e project's setup: a directory for the run's observed responses (inherited by the workers). */
export default function globalSetup(): void {
  process.env[OBSERVATIONS_DIR] = createObservationsDir();
}
