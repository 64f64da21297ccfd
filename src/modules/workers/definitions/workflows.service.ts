import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { FieldValidationError } from 'src/common/http/errors';
import { PageQuery } from 'src/common/pagination/query';
import { screenFields } from 'src/modules/workers/credential-screen';
import { PublishDto } from 'src/modules/workers/definitions/dto/workers.dto';
import { CreateWorkflowDto, PatchWorkflowDto } from 'src/modules/workers/definitions/dto/workflows.dto';
import { RevisionedLifecycle } from 'src/modules/workers/definitions/lifecycle';
import { toWorkflowDocument, toWorkflowRevisionDocument, workflowDigest } from 'src/modules/workers/definitions/workflow.document';
import { graphErrors, WorkflowStep } from 'src/modules/workers/definitions/workflow-graph';
import { WorkersRepository } from 'src/modules/workers/definitions/workers.repository';
import { WorkflowsRepository } from 'src/modules/workers/definitions/workflows.repository';
import { WorkflowRevision } from 'src/modules/workers/entities/workflow-revision.entity';
import { Workflow } from 'src/modules/workers/entities/workflow.entity';
import { EntitlementsService } from 'src/modules/workers/reference/entitlements.service';

/**
 * Workflows: a graph of steps, each running a published Worker, optionally under a CEL
 * `condition`, on the lifecycle Workers share. Drafts are edited with PATCH (the steps are
 * replaced); publish takes the Worker publish pins, then validates the graph and compiles every
 * condition. No trigger route exists, so a published workflow starts nothing.
 */
@Injectable()
export class WorkflowsService {
  private readonly lifecycle: RevisionedLifecycle<Workflow, WorkflowRevision, WorkflowStep[]>;

  constructor(
    access: WorkspaceAccess,
    repository: WorkflowsRepository,
    private readonly workers: WorkersRepository,
    private readonly entitlements: EntitlementsService,
  ) {
    this.lifecycle = new RevisionedLifecycle<Workflow, WorkflowRevision, WorkflowStep[]>(access, {
      name: 'workflow',
      plural: 'workflows',
      prefixes: { definition: 'wfl', revision: 'wfr' },
      repository,
      toDocument: toWorkflowDocument,
      toRevisionDocument: toWorkflowRevisionDocument,
      // A draft revision; the entitlement's trigger flags travel onto it as `permitted_trigger_types`.
      draft: async (tx, ws, at, steps) => {
        const { plan } = await this.entitlements.plan(ws.id, tx.manager);
        const triggers = ['manual', ...(plan.schedules_allowed ? ['schedule'] : []), ...(plan.webhooks_allowed ? ['webhook'] : [])];
        return {
          id: at.revisionId,
          workspaceId: ws.id,
          workflowId: at.definitionId,
          revisionNumber: at.number,
          state: 'draft',
          steps,
          permittedTriggerTypes: triggers,
        };
      },
      rewrite: (_tx, _ws, steps) => Promise.resolve({ steps }),
      digest: workflowDigest,
      publishable: async (tx, ws, revision) => {
        const errors = graphErrors(revision.steps, await this.workers.publishedIds(tx.manager, ws.id));
        if (errors.length > 0) throw new FieldValidationError(errors);
      },
    });
  }

  create(ctx: WorkspaceContext, dto: CreateWorkflowDto) {
    screenFields([
      [['display_name'], dto.display_name],
      [['description'], dto.description],
    ]);
    return this.lifecycle.create(ctx, () => ({ slug: dto.slug, displayName: dto.display_name, description: dto.description ?? null }), []);
  }

  list(ws: WorkspaceContext, q: PageQuery) {
    return this.lifecycle.list(ws, q);
  }

  get(ws: WorkspaceContext, workflowId: string) {
    return this.lifecycle.get(ws, workflowId);
  }

  /** Replaces the steps of the open draft (a new draft is cut after a publish). */
  patch(ctx: WorkspaceContext, workflowId: string, dto: PatchWorkflowDto) {
    const steps: WorkflowStep[] = dto.steps.map((s) => ({
      step_id: s.step_id,
      worker_id: s.worker_id,
      depends_on: s.depends_on ?? [],
      ...(s.condition !== undefined ? { condition: s.condition } : {}),
    }));
    return this.lifecycle.patch(ctx, workflowId, () => Promise.resolve(steps));
  }

  versions(ws: WorkspaceContext, workflowId: string) {
    return this.lifecycle.versions(ws, workflowId);
  }

  publish(ctx: WorkspaceContext, workflowId: string, dto: PublishDto) {
    return this.lifecycle.publish(ctx, workflowId, dto);
  }
}
