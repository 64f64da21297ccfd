import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { WorkflowRevision } from 'src/modules/workers/entities/workflow-revision.entity';
import { Workflow } from 'src/modules/workers/entities/workflow.entity';
import { RevisionedRepository } from 'src/modules/workers/definitions/revisioned.repository';

/** Every statement on `workflows` and `workflow_revisions` (all of them shared, in RevisionedRepository). */
@Injectable()
export class WorkflowsRepository extends RevisionedRepository<Workflow, WorkflowRevision> {
  constructor(dataSource: DataSource) {
    super(dataSource, Workflow, WorkflowRevision, 'workflowId');
  }
}
