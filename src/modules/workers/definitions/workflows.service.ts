import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { canonicalJson, sha256Tagged } from 'src/common/crypto/crypto';
import { ApiError, FieldValidationError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { PageQuery } from 'src/common/pagination/query';
import { formatTime, formatTimeRequired } from 'src/common/time/time';
import { isUniqueViolation } from 'src/database/errors';
import { Tx } from 'src/database/transaction';
import { screenFields } from 'src/modules/workers/credential-screen';
import { PublishDto } from 'src/modules/workers/definitions/dto/workers.dto';
import { CreateWorkflowDto, PatchWorkflowDto } from 'src/modules/workers/definitions/dto/workflows.dto';
import { EntitlementsService } from 'src/modules/workers/reference/entitlements.service';
import { cursorPosition, page } from 'src/modules/workers/paging';
import { capabilitiesFor, DetailObjectError } from 'src/modules/workers/workers.common';
import { graphErrors, WorkflowStep } from 'src/modules/workers/definitions/workflow-graph';

interface WorkflowRow {
  id: string;
  workspace_id: string;
  slug: string;
  display_name: string;
  description: string | null;
  lifecycle: string;
  draft_revision_id: string | null;
  published_revision_id: string | null;
  latest_revision_number: number;
  created_by_user_id: string;
  created_by_display_name: string | null;
  created_at: Date;
  updated_at: Date;
}

interface WorkflowRevisionRow {
  id: string;
  workspace_id: string;
  workflow_id: string;
  revision_number: number;
  state: string;
  steps: WorkflowStep[];
  permitted_trigger_types: string[];
  revision_digest: string | null;
  created_at: Date;
  published_at: Date | null;
}

const COLUMNS = `id, workspace_id, slug, display_name, description, lifecycle, draft_revision_id, published_revision_id, latest_revision_number,
  created_by_user_id, created_by_display_name, created_at, updated_at`;
const REVISION_COLUMNS = `id, workspace_id, workflow_id, revision_number, state, steps, permitted_trigger_types, revision_digest, created_at, published_at`;

const toWorkflowDocument = (row: WorkflowRow) => ({
  schema_version: 1,
  workflow_id: row.id,
  workspace_id: row.workspace_id,
  slug: row.slug,
  display_name: row.display_name,
  description: row.description,
  lifecycle: row.lifecycle,
  draft_revision_id: row.draft_revision_id,
  published_revision_id: row.published_revision_id,
  latest_revision_number: row.latest_revision_number,
  created_by: { kind: 'operator', id: row.created_by_user_id, display_name: row.created_by_display_name },
  created_at: formatTimeRequired(row.created_at),
  updated_at: formatTimeRequired(row.updated_at),
});

const toRevisionDocument = (row: WorkflowRevisionRow) => ({
  schema_version: 1,
  revision_id: row.id,
  workflow_id: row.workflow_id,
  workspace_id: row.workspace_id,
  revision_number: row.revision_number,
  state: row.state,
  revision_digest: row.revision_digest,
  steps: row.steps,
  permitted_trigger_types: row.permitted_trigger_types,
  created_at: formatTimeRequired(row.created_at),
  published_at: formatTime(row.published_at),
});

/** `sha256:` over canonical JSON of the revision's `permitted_trigger_types` and `steps`. */
export const workflowDigest = (row: Pick<WorkflowRevisionRow, 'steps' | 'permitted_trigger_types'>) =>
  sha256Tagged(canonicalJson({ permitted_trigger_types: row.permitted_trigger_types, steps: row.steps }));

/**
 * Workflows: a graph of steps, each running a published Worker, optionally under a CEL
 * `condition`. Drafts are edited with PATCH; publish takes the Worker publish pins, validates the
 * graph and compiles every condition. No trigger route exists, so a published workflow starts nothing.
 */
@Injectable()
export class WorkflowsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly access: WorkspaceAccess,
    private readonly entitlements: EntitlementsService,
  ) {}

  async create(ctx: WorkspaceContext, dto: CreateWorkflowDto) {
    screenFields([
      [['display_name'], dto.display_name],
      [['description'], dto.description],
    ]);
    return this.access.mutate(ctx, async (tx, ws) => {
      const workflowId = newId('wfl');
      const revisionId = newId('wfr');
      try {
        await tx.manager.query(
          `INSERT INTO workflows (id, workspace_id, slug, display_name, description, lifecycle, draft_revision_id, latest_revision_number,
             created_by_user_id, created_by_display_name)
           VALUES ($1, $2, $3, $4, $5, 'draft', $6, 1, $7, $8)`,
          [workflowId, ws.id, dto.slug, dto.display_name, dto.description ?? null, revisionId, ws.operator.userId, ws.operator.email],
        );
      } catch (error) {
        if (isUniqueViolation(error)) throw new ApiError(409, 'workflow slug already exists');
        throw error;
      }
      await this.insertRevision(tx, ws.id, workflowId, revisionId, 1, []);
      return { schema_version: 1, resource_id: workflowId, before: null, after: { lifecycle: 'draft', draft_revision_id: revisionId, revision_number: 1 } };
    });
  }

  async list(ws: WorkspaceContext, q: PageQuery) {
    const after = cursorPosition(`workflows:${ws.id}`, q.cursor);
    const rows: WorkflowRow[] = await this.dataSource.query(
      `SELECT ${COLUMNS} FROM workflows WHERE workspace_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) > ($2, $3))
       ORDER BY created_at, id LIMIT $4`,
      [ws.id, after?.at ?? null, after?.id ?? null, q.limit + 1],
    );
    const result = page(`workflows:${ws.id}`, rows, q.limit);
    return { workflows: result.rows.map(toWorkflowDocument), next_cursor: result.next_cursor, capabilities: capabilitiesFor(ws) };
  }

  async get(ws: WorkspaceContext, workflowId: string) {
    return { workflow: toWorkflowDocument(await this.workflow(this.dataSource.manager, ws.id, workflowId)), capabilities: capabilitiesFor(ws) };
  }

  /** Replaces the steps of the open draft (a new draft is cut after a publish). */
  async patch(ctx: WorkspaceContext, workflowId: string, dto: PatchWorkflowDto) {
    return this.access.mutate(ctx, async (tx, ws) => {
      const workflow = await this.workflow(tx.manager, ws.id, workflowId, true);
      const steps: WorkflowStep[] = dto.steps.map((s) => ({
        step_id: s.step_id,
        worker_id: s.worker_id,
        depends_on: s.depends_on ?? [],
        ...(s.condition !== undefined ? { condition: s.condition } : {}),
      }));
      const before = { draft_revision_id: workflow.draft_revision_id, revision_number: workflow.draft_revision_id ? workflow.latest_revision_number : null };
      let revisionId = workflow.draft_revision_id;
      let number = workflow.latest_revision_number;
      if (revisionId) {
        await tx.manager.query(`UPDATE workflow_revisions SET steps = $3 WHERE workspace_id = $1 AND id = $2`, [ws.id, revisionId, JSON.stringify(steps)]);
      } else {
        revisionId = newId('wfr');
        number += 1;
        await this.insertRevision(tx, ws.id, workflowId, revisionId, number, steps);
      }
      await tx.manager.query(
        `UPDATE workflows SET draft_revision_id = $3, latest_revision_number = $4, updated_at = clock_timestamp() WHERE workspace_id = $1 AND id = $2`,
        [ws.id, workflowId, revisionId, number],
      );
      return { schema_version: 1, resource_id: workflowId, before, after: { draft_revision_id: revisionId, revision_number: number } };
    });
  }

  async versions(ws: WorkspaceContext, workflowId: string) {
    await this.workflow(this.dataSource.manager, ws.id, workflowId);
    const rows: WorkflowRevisionRow[] = await this.dataSource.query(
      `SELECT ${REVISION_COLUMNS} FROM workflow_revisions WHERE workspace_id = $1 AND workflow_id = $2 ORDER BY revision_number DESC`,
      [ws.id, workflowId],
    );
    return { revisions: rows.map(toRevisionDocument), capabilities: capabilitiesFor(ws) };
  }

  async publish(ctx: WorkspaceContext, workflowId: string, dto: PublishDto) {
    return this.access.mutate(ctx, async (tx, ws) => {
      const workflow = await this.workflow(tx.manager, ws.id, workflowId, true);
      const rows: WorkflowRevisionRow[] = await tx.manager.query(
        `SELECT ${REVISION_COLUMNS} FROM workflow_revisions WHERE workspace_id = $1 AND workflow_id = $2 AND id = $3`,
        [ws.id, workflowId, dto.revision_id],
      );
      const revision = rows[0];
      if (!revision) throw new ApiError(404, 'revision not found');
      if (revision.state !== 'draft') throw new ApiError(409, 'workflow_revision_already_published');
      if (workflow.published_revision_id !== dto.expected_published_revision_id) throw new ApiError(409, 'published_revision_moved');
      const digest = workflowDigest(revision);
      if (digest !== dto.revision_digest) throw new DetailObjectError(409, { revision_id: revision.id, expected: digest });
      const published: { id: string }[] = await tx.manager.query(`SELECT id FROM workers WHERE workspace_id = $1 AND published_revision_id IS NOT NULL`, [ws.id]);
      const errors = graphErrors(revision.steps, new Set(published.map((w) => w.id)));
      if (errors.length > 0) throw new FieldValidationError(errors);
      await tx.manager.query(`UPDATE workflow_revisions SET state = 'superseded' WHERE workspace_id = $1 AND workflow_id = $2 AND state = 'published'`, [ws.id, workflowId]);
      await tx.manager.query(
        `UPDATE workflow_revisions SET state = 'published', revision_digest = $3, published_at = clock_timestamp() WHERE workspace_id = $1 AND id = $2`,
        [ws.id, revision.id, digest],
      );
      await tx.manager.query(
        `UPDATE workflows SET lifecycle = 'published', published_revision_id = $3, draft_revision_id = NULL, updated_at = clock_timestamp()
         WHERE workspace_id = $1 AND id = $2`,
        [ws.id, workflowId, revision.id],
      );
      return {
        schema_version: 1,
        resource_id: workflowId,
        before: { lifecycle: workflow.lifecycle, published_revision_id: workflow.published_revision_id },
        after: { lifecycle: 'published', published_revision_id: revision.id, revision_number: revision.revision_number, revision_digest: digest },
      };
    });
  }

  private async workflow(manager: Tx['manager'], workspaceId: string, workflowId: string, forUpdate = false): Promise<WorkflowRow> {
    const rows: WorkflowRow[] = await manager.query(`SELECT ${COLUMNS} FROM workflows WHERE workspace_id = $1 AND id = $2${forUpdate ? ' FOR UPDATE' : ''}`, [
      workspaceId,
      workflowId,
    ]);
    if (!rows[0]) throw new ApiError(404, 'workflow not found');
    return rows[0];
  }

  /** A draft revision; the entitlement's trigger flags travel onto it as `permitted_trigger_types`. */
  private async insertRevision(tx: Tx, workspaceId: string, workflowId: string, revisionId: string, number: number, steps: WorkflowStep[]): Promise<void> {
    const { plan } = await this.entitlements.plan(tx.manager, workspaceId);
    const triggers = ['manual', ...(plan.schedules_allowed ? ['schedule'] : []), ...(plan.webhooks_allowed ? ['webhook'] : [])];
    await tx.manager.query(
      `INSERT INTO workflow_revisions (id, workspace_id, workflow_id, revision_number, state, steps, permitted_trigger_types)
       VALUES ($1, $2, $3, $4, 'draft', $5, $6)`,
      [revisionId, workspaceId, workflowId, number, JSON.stringify(steps), JSON.stringify(triggers)],
    );
  }
}
