import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { bodyError } from 'src/common/http/errors';
import { screenFields } from 'src/modules/workers/credential-screen';
import { DraftWorkerDto } from 'src/modules/workers/definitions/dto/workers.dto';
import { EntitlementsService } from 'src/modules/workers/reference/entitlements.service';
import { DetailObjectError } from 'src/modules/workers/workers.common';
import { DEFAULT_EXECUTION_MODE, DEFAULT_LIMITS, DEFAULT_PRESET, EnvironmentClass, RUNNABLE_CLASSES, TEMPLATES } from 'src/modules/workers/workers.data';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

export const ASSISTANT_HREF = '/docs/workers.md#enabling-the-workspace-assistant';

/** Words that suggest an environment class when no template names one. */
const HINTS: [EnvironmentClass, RegExp][] = [
  ['browser', /\b(browser|website|web page|form|click)\b/i],
  ['research', /\b(research|search|summari[sz]e|sources?)\b/i],
  ['development', /\b(repo(sitory)?|pull request|code review|tests?|build|bug)\b/i],
];

function slugFrom(text: string): string {
  const words = text.toLowerCase().match(/[a-z0-9]+/g) ?? [];
  const slug = words.slice(0, 6).join('-').slice(0, 64).replace(/-+$/, '');
  return slug.length > 0 ? slug : 'worker';
}

/**
 * The workspace assistant: turns a job description into a proposal for a Worker. A proposal
 * grants nothing (`authority` `proposal_only`) and is not stored; the environment classes it may
 * use are assembled here from the plan and the deployment, never taken from the request.
 */
@Injectable()
export class DraftsService {
  constructor(
    private readonly entitlements: EntitlementsService,
    private readonly workspaces: WorkspacesService,
  ) {}

  async draft(ws: WorkspaceContext, dto: DraftWorkerDto) {
    screenFields([[['job_description'], dto.job_description]]);
    if (!(await this.workspaces.assistantEnabled(ws.id))) {
      throw new DetailObjectError(409, {
        code: 'denied',
        message: 'the workspace assistant is not enabled for this workspace',
        href: ASSISTANT_HREF,
      });
    }
    const template = dto.template_id === undefined ? undefined : TEMPLATES.find((t) => t.template_id === dto.template_id);
    if (dto.template_id !== undefined && !template) throw bodyError(['template_id'], 'unknown template');
    const { plan } = await this.entitlements.plan(ws.id);
    const permitted = plan.permitted_environment_classes.filter((c) => RUNNABLE_CLASSES.has(c));
    const wanted: EnvironmentClass = template?.environment_class ?? HINTS.find(([, re]) => re.test(dto.job_description))?.[0] ?? 'code';
    const environmentClasses = permitted.includes(wanted) ? [wanted] : permitted.includes('code') ? ['code'] : permitted.slice(0, 1);
    const notes: string[] = [];
    if (!permitted.includes(wanted)) {
      notes.push(`the ${wanted} environment is not available to this workspace; the proposal uses ${environmentClasses.join(', ')}`);
    }
    const firstLine = dto.job_description.split('\n')[0].trim();
    return {
      schema_version: 1,
      workspace_id: ws.id,
      authority: 'proposal_only',
      proposal: {
        slug: slugFrom(firstLine),
        display_name: firstLine.slice(0, 200),
        description: dto.job_description.slice(0, 2000),
        template_id: template?.template_id ?? null,
        environment_classes: environmentClasses,
        instructions: template ? `${template.suggested_instructions}\n\n${dto.job_description}` : dto.job_description,
        execution_mode: dto.execution_mode ?? template?.default_execution_mode ?? DEFAULT_EXECUTION_MODE,
        permission_preset: dto.permission_preset ?? template?.default_permission_preset ?? DEFAULT_PRESET,
        limits: DEFAULT_LIMITS,
      },
      permitted_environment_classes: permitted,
      notes,
    };
  }
}
