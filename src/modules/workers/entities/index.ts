import { WorkerPlan } from 'src/modules/workers/entities/worker-plan.entity';
import { WorkerRevision } from 'src/modules/workers/entities/worker-revision.entity';
import { WorkerRunArtifact } from 'src/modules/workers/entities/worker-run-artifact.entity';
import { WorkerRun } from 'src/modules/workers/entities/worker-run.entity';
import { WorkerSessionProfile } from 'src/modules/workers/entities/worker-session-profile.entity';
import { Worker } from 'src/modules/workers/entities/worker.entity';
import { WorkflowRevision } from 'src/modules/workers/entities/workflow-revision.entity';
import { Workflow } from 'src/modules/workers/entities/workflow.entity';

/** The tables workers owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const WORKERS_ENTITIES = [WorkerPlan, WorkerRevision, WorkerRunArtifact, WorkerRun, WorkerSessionProfile, Worker, WorkflowRevision, Workflow];
