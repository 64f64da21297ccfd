import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError, bodyError } from 'src/common/http/errors';
import { Tx } from 'src/database/transaction';
import { KeysService } from 'src/modules/keys/keys.service';
import { screenFields } from 'src/modules/workers/credential-screen';
import { BODY_FIELDS, CreateWorkerDto, ListWorkersQuery, PatchWorkerDto, PublishDto } from 'src/modules/workers/definitions/dto/workers.dto';
import { RevisionedLifecycle } from 'src/modules/workers/definitions/lifecycle';
import { revisionDigest } from 'src/modules/workers/definitions/revision-digest';
import { classesOf, digestPartsOf, toRevisionDocument, toWorkerDocument } from 'src/modules/workers/definitions/worker.document';
import { WorkersRepository } from 'src/modules/workers/definitions/workers.repository';
import { WorkerRevision } from 'src/modules/workers/entities/worker-revision.entity';
import { Worker } from 'src/modules/workers/entities/worker.entity';
import { grantsFor } from 'src/modules/workers/reference/presets';
import { PresetsService } from 'src/modules/workers/reference/presets.service';
import { SessionProfilesRepository } from 'src/modules/workers/runs/session-profiles.repository';
import { DEFAULT_ENVIRONMENT_CLASSES, DEFAULT_EXECUTION_MODE, DEFAULT_LIMITS, DEFAULT_PRESET, PresetName, TEMPLATES } from 'src/modules/workers/workers.data';

/** What a Worker revision holds beyond its bookkeeping. */
interface WorkerContent {
  body: Record<string, unknown>;
  preset: PresetName;
  mode: string;
  limits: Record<string, unknown>;
}

/**
 * Worker definitions and their revisions, on the lifecycle workflows share: a create checks the
 * agent passport, an edit merges body fields into the draft, and the grants of a revision are
 * compiled from its permission preset and environment classes whenever its body changes.
 */
@Injectable()
export class WorkersService {
  private readonly lifecycle: RevisionedLifecycle<Worker, WorkerRevision, WorkerContent>;

  constructor(
    access: WorkspaceAccess,
    private readonly repository: WorkersRepository,
    private readonly profiles: SessionProfilesRepository,
    private readonly presets: PresetsService,
    private readonly keys: KeysService,
  ) {
    this.lifecycle = new RevisionedLifecycle<Worker, WorkerRevision, WorkerContent>(access, {
      name: 'worker',
      plural: 'workers',
      prefixes: { definition: 'wkr', revision: 'wrv' },
      repository,
      toDocument: toWorkerDocument,
      toRevisionDocument,
      draft: async (_tx, ws, at, content) => {
        const preset = await this.presets.compile(ws.id, content.preset);
        const grants = grantsFor(preset, classesOf(content.body));
        return {
          id: at.revisionId,
          workspaceId: ws.id,
          workerId: at.definitionId,
          revisionNumber: at.number,
          state: 'draft',
          body: content.body,
          permissionPreset: content.preset,
          policyRevisionId: preset.policy_revision_id,
          executionMode: content.mode,
          limits: content.limits,
          allowedCapabilities: grants.allowed_capabilities,
          uiActions: grants.ui_actions,
        };
      },
      rewrite: async (_tx, ws, content) => {
        const grants = grantsFor(await this.presets.compile(ws.id, content.preset), classesOf(content.body));
        return { body: content.body, executionMode: content.mode, allowedCapabilities: grants.allowed_capabilities, uiActions: grants.ui_actions };
      },
      digest: (revision) => revisionDigest(digestPartsOf(revision)),
      published: (revision) => ({ permission_policy_revision_id: revision.policyRevisionId }),
    });
  }

  create(ctx: WorkspaceContext, dto: CreateWorkerDto) {
    screenFields([
      [['display_name'], dto.display_name],
      [['description'], dto.description],
      [['instructions'], dto.instructions],
    ]);
    if (typeof dto.template_id === 'string' && !TEMPLATES.some((t) => t.template_id === dto.template_id)) throw bodyError(['template_id'], 'unknown template');
    const classes = dto.environment_classes ?? DEFAULT_ENVIRONMENT_CLASSES;
    const body: Record<string, unknown> = { environment_requests: classes.map((c) => ({ environment_class: c })) };
    if (typeof dto.instructions === 'string') body.instructions = dto.instructions;
    const fields = (ws: WorkspaceContext) => ({
      env: ws.env,
      slug: dto.slug,
      displayName: dto.display_name,
      description: dto.description ?? null,
      agentPassportId: dto.agent_passport_id,
      templateId: dto.template_id ?? null,
    });
    const content = { body, preset: DEFAULT_PRESET, mode: DEFAULT_EXECUTION_MODE, limits: { ...DEFAULT_LIMITS } };
    return this.lifecycle.create(ctx, fields, content, (tx, ws) => this.assertPassport(tx, ws.id, dto.agent_passport_id));
  }

  list(ws: WorkspaceContext, q: ListWorkersQuery) {
    return this.lifecycle.list(ws, q);
  }

  get(ws: WorkspaceContext, workerId: string) {
    return this.lifecycle.get(ws, workerId);
  }

  /** Edits land on the open draft; with none open, a new draft is cut from the published revision. */
  patch(ctx: WorkspaceContext, workerId: string, dto: PatchWorkerDto) {
    screenFields([[['body', 'instructions'], dto.body?.instructions]]);
    return this.lifecycle.patch(ctx, workerId, async (tx, ws, worker) => {
      if (worker.lifecycle === 'retired') throw new ApiError(409, 'worker is retired');
      if (dto.body?.session_profile_ids) await this.assertSessionProfiles(tx, ws.id, dto.body.session_profile_ids);
      const base = (await this.repository.revision(ws.id, workerId, (worker.draftRevisionId ?? worker.publishedRevisionId)!, tx.manager))!;
      const body = { ...base.body };
      for (const field of BODY_FIELDS) {
        const value = dto.body?.[field];
        if (value === null) delete body[field];
        else if (value === undefined) continue;
        else if (field === 'environment_requests') body[field] = (value as { environment_class: string }[]).map((r) => ({ environment_class: r.environment_class }));
        else body[field] = value;
      }
      if (classesOf(body).length === 0) throw bodyError(['body', 'environment_requests'], 'a worker needs at least one environment class');
      return { body, preset: base.permissionPreset as PresetName, mode: dto.execution_mode ?? base.executionMode, limits: base.limits };
    });
  }

  versions(ws: WorkspaceContext, workerId: string) {
    return this.lifecycle.versions(ws, workerId);
  }

  publish(ctx: WorkspaceContext, workerId: string, dto: PublishDto) {
    return this.lifecycle.publish(ctx, workerId, dto);
  }

  /** A Worker of the workspace (locked with `lock`); 404 `worker not found` otherwise. */
  worker(workspaceId: string, workerId: string, manager?: Tx['manager'], lock = false): Promise<Worker> {
    return this.lifecycle.definition(workspaceId, workerId, manager, lock);
  }

  private async assertPassport(tx: Tx, workspaceId: string, agentId: string): Promise<void> {
    if (!(await this.keys.hasActiveKey(tx.manager, workspaceId, agentId))) {
      throw bodyError(['agent_passport_id'], 'agent_passport_id must be the agent_id of an active virtual key of this workspace');
    }
  }

  private async assertSessionProfiles(tx: Tx, workspaceId: string, ids: string[]): Promise<void> {
    const known = await this.profiles.activeIds(tx.manager, workspaceId, ids);
    const index = ids.findIndex((id) => !known.has(id));
    if (index >= 0) throw bodyError(['body', 'session_profile_ids', index], 'unknown or revoked session profile');
  }
}
