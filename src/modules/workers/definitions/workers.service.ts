import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError, bodyError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { isUniqueViolation } from 'src/database/errors';
import { Tx } from 'src/database/transaction';
import { KeysService } from 'src/modules/keys/keys.service';
import { screenFields } from 'src/modules/workers/credential-screen';
import { BODY_FIELDS, CreateWorkerDto, ListWorkersQuery, PatchWorkerDto, PublishDto } from 'src/modules/workers/definitions/dto/workers.dto';
import { digestPartsOf, RevisionRow, toRevisionDocument, toWorkerDocument, WorkerRow } from 'src/modules/workers/definitions/worker.document';
import { cursorPosition, page } from 'src/modules/workers/paging';
import { grantsFor } from 'src/modules/workers/reference/presets';
import { PresetsService } from 'src/modules/workers/reference/presets.service';
import { revisionDigest } from 'src/modules/workers/definitions/revision-digest';
import { capabilitiesFor, DetailObjectError } from 'src/modules/workers/workers.common';
import { DEFAULT_ENVIRONMENT_CLASSES, DEFAULT_EXECUTION_MODE, DEFAULT_LIMITS, DEFAULT_PRESET, PresetName, TEMPLATES } from 'src/modules/workers/workers.data';

const WORKER_COLUMNS = `id, workspace_id, env, slug, display_name, description, agent_passport_id, lifecycle, draft_revision_id,
  published_revision_id, latest_revision_number, template_id, created_by_user_id, created_by_display_name, created_at, updated_at`;
const REVISION_COLUMNS = `id, workspace_id, worker_id, revision_number, state, body, permission_preset, policy_revision_id, execution_mode,
  limits, allowed_capabilities, ui_actions, revision_digest, created_at, published_at`;

export const WORKER_NOT_FOUND = 'worker not found';

/** The environment classes a revision body asks for. */
export const classesOf = (body: Record<string, unknown>): string[] =>
  ((body.environment_requests as { environment_class: string }[] | undefined) ?? []).map((r) => r.environment_class);

/**
 * Worker definitions and their revisions. Every write runs under the workspace lock, so writes in
 * one workspace are serialized: a slug is claimed once, a publish pin is compared with the value
 * no concurrent publish can move.
 */
@Injectable()
export class WorkersService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly access: WorkspaceAccess,
    private readonly presets: PresetsService,
    private readonly keys: KeysService,
  ) {}

  async create(ctx: WorkspaceContext, dto: CreateWorkerDto) {
    screenFields([
      [['display_name'], dto.display_name],
      [['description'], dto.description],
      [['instructions'], dto.instructions],
    ]);
    if (typeof dto.template_id === 'string' && !TEMPLATES.some((t) => t.template_id === dto.template_id)) throw bodyError(['template_id'], 'unknown template');
    const classes = dto.environment_classes ?? DEFAULT_ENVIRONMENT_CLASSES;
    const body: Record<string, unknown> = { environment_requests: classes.map((c) => ({ environment_class: c })) };
    if (typeof dto.instructions === 'string') body.instructions = dto.instructions;
    return this.access.mutate(ctx, async (tx, ws) => {
      await this.assertPassport(tx, ws.id, dto.agent_passport_id);
      const workerId = newId('wkr');
      const revisionId = newId('wrv');
      try {
        await tx.manager.query(
          `INSERT INTO workers (id, workspace_id, env, slug, display_name, description, agent_passport_id, lifecycle, draft_revision_id,
             latest_revision_number, template_id, created_by_user_id, created_by_display_name)
           VALUES ($1, $2, $3, $4, $5, $6, $7, 'draft', $8, 1, $9, $10, $11)`,
          [workerId, ws.id, ws.env, dto.slug, dto.display_name, dto.description ?? null, dto.agent_passport_id, revisionId, dto.template_id ?? null, ws.operator.userId, ws.operator.email],
        );
      } catch (error) {
        if (isUniqueViolation(error)) throw new ApiError(409, 'worker slug already exists');
        throw error;
      }
      await this.insertRevision(tx, ws.id, workerId, revisionId, 1, body, DEFAULT_PRESET, DEFAULT_EXECUTION_MODE, { ...DEFAULT_LIMITS });
      return { schema_version: 1, resource_id: workerId, before: null, after: { lifecycle: 'draft', draft_revision_id: revisionId, revision_number: 1 } };
    });
  }

  async list(ws: WorkspaceContext, q: ListWorkersQuery) {
    const after = cursorPosition(`workers:${ws.id}`, q.cursor);
    const rows: WorkerRow[] = await this.dataSource.query(
      `SELECT ${WORKER_COLUMNS} FROM workers WHERE workspace_id = $1 AND ($2::text IS NULL OR lifecycle = $2)
         AND ($3::timestamptz IS NULL OR (created_at, id) > ($3, $4)) ORDER BY created_at, id LIMIT $5`,
      [ws.id, q.lifecycle ?? null, after?.at ?? null, after?.id ?? null, q.limit + 1],
    );
    const result = page(`workers:${ws.id}`, rows, q.limit);
    return { workers: result.rows.map(toWorkerDocument), next_cursor: result.next_cursor, capabilities: capabilitiesFor(ws) };
  }

  async get(ws: WorkspaceContext, workerId: string) {
    return { worker: toWorkerDocument(await this.worker(this.dataSource.manager, ws.id, workerId)), capabilities: capabilitiesFor(ws) };
  }

  /** Edits land on the open draft; with none open, a new draft is cut from the published revision. */
  async patch(ctx: WorkspaceContext, workerId: string, dto: PatchWorkerDto) {
    screenFields([[['body', 'instructions'], dto.body?.instructions]]);
    return this.access.mutate(ctx, async (tx, ws) => {
      const worker = await this.worker(tx.manager, ws.id, workerId, true);
      if (worker.lifecycle === 'retired') throw new ApiError(409, 'worker is retired');
      if (dto.body?.session_profile_ids) await this.assertSessionProfiles(tx, ws.id, dto.body.session_profile_ids);
      const before = { draft_revision_id: worker.draft_revision_id, revision_number: worker.draft_revision_id ? worker.latest_revision_number : null };
      const base = await this.revision(tx.manager, ws.id, workerId, (worker.draft_revision_id ?? worker.published_revision_id)!);
      const body = { ...base.body };
      for (const field of BODY_FIELDS) {
        const value = dto.body?.[field];
        if (value === null) delete body[field];
        else if (value !== undefined) body[field] = field === 'environment_requests' ? (value as { environment_class: string }[]).map((r) => ({ environment_class: r.environment_class })) : value;
      }
      if (classesOf(body).length === 0) throw bodyError(['body', 'environment_requests'], 'a worker needs at least one environment class');
      const mode = dto.execution_mode ?? base.execution_mode;
      let revisionId = worker.draft_revision_id;
      let number = worker.latest_revision_number;
      if (revisionId) {
        const grants = grantsFor(await this.presets.compile(ws.id, base.permission_preset as PresetName), classesOf(body));
        await tx.manager.query(
          `UPDATE worker_revisions SET body = $3, execution_mode = $4, allowed_capabilities = $5, ui_actions = $6 WHERE workspace_id = $1 AND id = $2`,
          [ws.id, revisionId, JSON.stringify(body), mode, JSON.stringify(grants.allowed_capabilities), JSON.stringify(grants.ui_actions)],
        );
      } else {
        revisionId = newId('wrv');
        number += 1;
        await this.insertRevision(tx, ws.id, workerId, revisionId, number, body, base.permission_preset as PresetName, mode, base.limits);
      }
      await tx.manager.query(
        `UPDATE workers SET draft_revision_id = $3, latest_revision_number = $4, updated_at = clock_timestamp() WHERE workspace_id = $1 AND id = $2`,
        [ws.id, workerId, revisionId, number],
      );
      return { schema_version: 1, resource_id: workerId, before, after: { draft_revision_id: revisionId, revision_number: number } };
    });
  }

  async versions(ws: WorkspaceContext, workerId: string) {
    await this.worker(this.dataSource.manager, ws.id, workerId);
    const rows: RevisionRow[] = await this.dataSource.query(
      `SELECT ${REVISION_COLUMNS} FROM worker_revisions WHERE workspace_id = $1 AND worker_id = $2 ORDER BY revision_number DESC`,
      [ws.id, workerId],
    );
    return { revisions: rows.map(toRevisionDocument), capabilities: capabilitiesFor(ws) };
  }

  /**
   * Publishes the named draft when the three pins hold: the revision is still a draft (else
   * `worker_revision_already_published`), the live revision is the one the caller believes
   * (else `published_revision_moved`), and the digest matches (else the mismatch object).
   */
  async publish(ctx: WorkspaceContext, workerId: string, dto: PublishDto) {
    return this.access.mutate(ctx, async (tx, ws) => {
      const worker = await this.worker(tx.manager, ws.id, workerId, true);
      const rows: RevisionRow[] = await tx.manager.query(
        `SELECT ${REVISION_COLUMNS} FROM worker_revisions WHERE workspace_id = $1 AND worker_id = $2 AND id = $3`,
        [ws.id, workerId, dto.revision_id],
      );
      const revision = rows[0];
      if (!revision) throw new ApiError(404, 'revision not found');
      if (revision.state !== 'draft') throw new ApiError(409, 'worker_revision_already_published');
      if (worker.published_revision_id !== dto.expected_published_revision_id) throw new ApiError(409, 'published_revision_moved');
      const digest = revisionDigest(digestPartsOf(revision));
      if (digest !== dto.revision_digest) throw new DetailObjectError(409, { revision_id: revision.id, expected: digest });
      await tx.manager.query(`UPDATE worker_revisions SET state = 'superseded' WHERE workspace_id = $1 AND worker_id = $2 AND state = 'published'`, [ws.id, workerId]);
      await tx.manager.query(
        `UPDATE worker_revisions SET state = 'published', revision_digest = $3, published_at = clock_timestamp() WHERE workspace_id = $1 AND id = $2`,
        [ws.id, revision.id, digest],
      );
      await tx.manager.query(
        `UPDATE workers SET lifecycle = 'published', published_revision_id = $3, draft_revision_id = NULL, updated_at = clock_timestamp()
         WHERE workspace_id = $1 AND id = $2`,
        [ws.id, workerId, revision.id],
      );
      return {
        schema_version: 1,
        resource_id: workerId,
        before: { lifecycle: worker.lifecycle, published_revision_id: worker.published_revision_id },
        after: {
          lifecycle: 'published',
          published_revision_id: revision.id,
          revision_number: revision.revision_number,
          revision_digest: digest,
          permission_policy_revision_id: revision.policy_revision_id,
        },
      };
    });
  }

  /** A worker of the workspace (locked with `forUpdate`); 404 `worker not found` otherwise. */
  async worker(manager: Tx['manager'], workspaceId: string, workerId: string, forUpdate = false): Promise<WorkerRow> {
    const rows: WorkerRow[] = await manager.query(
      `SELECT ${WORKER_COLUMNS} FROM workers WHERE workspace_id = $1 AND id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
      [workspaceId, workerId],
    );
    if (!rows[0]) throw new ApiError(404, WORKER_NOT_FOUND);
    return rows[0];
  }

  async revision(manager: Tx['manager'], workspaceId: string, workerId: string, revisionId: string): Promise<RevisionRow> {
    const rows: RevisionRow[] = await manager.query(`SELECT ${REVISION_COLUMNS} FROM worker_revisions WHERE workspace_id = $1 AND worker_id = $2 AND id = $3`, [
      workspaceId,
      workerId,
      revisionId,
    ]);
    return rows[0];
  }

  private async insertRevision(
    tx: Tx,
    workspaceId: string,
    workerId: string,
    revisionId: string,
    number: number,
    body: Record<string, unknown>,
    presetName: PresetName,
    mode: string,
    limits: object,
  ): Promise<void> {
    const preset = await this.presets.compile(workspaceId, presetName);
    const grants = grantsFor(preset, classesOf(body));
    await tx.manager.query(
      `INSERT INTO worker_revisions (id, workspace_id, worker_id, revision_number, state, body, permission_preset, policy_revision_id,
         execution_mode, limits, allowed_capabilities, ui_actions)
       VALUES ($1, $2, $3, $4, 'draft', $5, $6, $7, $8, $9, $10, $11)`,
      [
        revisionId, workspaceId, workerId, number, JSON.stringify(body), presetName, preset.policy_revision_id, mode,
        JSON.stringify(limits), JSON.stringify(grants.allowed_capabilities), JSON.stringify(grants.ui_actions),
      ],
    );
  }

  private async assertPassport(tx: Tx, workspaceId: string, agentId: string): Promise<void> {
    if (!(await this.keys.hasActiveKey(tx.manager, workspaceId, agentId))) throw bodyError(['agent_passport_id'], 'agent_passport_id must be the agent_id of an active virtual key of this workspace');
  }

  private async assertSessionProfiles(tx: Tx, workspaceId: string, ids: string[]): Promise<void> {
    const rows: { id: string }[] = await tx.manager.query(`SELECT id FROM worker_session_profiles WHERE workspace_id = $1 AND id = ANY($2) AND status = 'active'`, [
      workspaceId,
      ids,
    ]);
    const known = new Set(rows.map((r) => r.id));
    const index = ids.findIndex((id) => !known.has(id));
    if (index >= 0) throw bodyError(['body', 'session_profile_ids', index], 'unknown or revoked session profile');
  }
}
