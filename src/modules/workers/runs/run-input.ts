import { WorkspaceContext } from 'src/platform/access/context';
import { WorkerRun } from 'src/modules/workers/entities/worker-run.entity';
import { RunPlan } from 'src/modules/workers/runs/admission';
import { toSessionProfileDocument } from 'src/modules/workers/runs/session-profiles.service';
import { DEFAULT_LIMITS, executionMode, ExecutionModeName } from 'src/modules/workers/workers.data';

/**
 * Everything the orchestrator needs to run (`POST /v1/runs`): revision, mode, limits,
 * capabilities, environment, session profile and input.
 */
export function runInput(ws: WorkspaceContext, run: WorkerRun, plan: RunPlan, input: Record<string, unknown>) {
  const revision = plan.revision;
  const template = plan.template;
  const limits = revision?.limits ?? { ...DEFAULT_LIMITS };
  const mode = (revision?.executionMode ?? template?.default_execution_mode) as ExecutionModeName;
  return {
    schema_version: 1,
    run_id: run.id,
    workspace_id: ws.id,
    env: ws.env,
    kind: run.kind,
    worker: revision
      ? {
          worker_id: plan.worker!.id,
          slug: plan.worker!.slug,
          agent_passport_id: plan.worker!.agentPassportId,
          revision_id: revision.id,
          revision_number: revision.revisionNumber,
          revision_digest: revision.revisionDigest,
          body: revision.body,
        }
      : null,
    template: template ? { template_id: template.template_id, instructions: template.suggested_instructions } : null,
    execution_mode: executionMode(mode),
    permission_preset: revision
      ? { preset: revision.permissionPreset, policy_revision_id: revision.policyRevisionId }
      : { preset: template!.default_permission_preset, policy_revision_id: null },
    limits,
    capabilities: { allowed_capabilities: revision?.allowedCapabilities ?? [], ui_actions: revision?.uiActions ?? [] },
    environment: { classes: plan.classes, network_policy: limits.network_policy, session_mode: limits.session_mode },
    session_profile: plan.profile ? toSessionProfileDocument(plan.profile) : null,
    input,
  };
}
