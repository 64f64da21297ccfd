import { Schema, text } from 'src/common/http/document-schema';
import { HandOff } from 'src/modules/workers/orchestrator.client';
import { DetailObjectError } from 'src/modules/workers/workers.common';

/** Where the run rules are written down; every run refusal points there. */
export const RULES = 'docs/workers.md#runs';

export interface Refusal {
  code: string;
  reason: string;
  what: string;
  why: string;
  suggested_fix: string;
  fix_action?: string;
  rule_reference?: string;
  run_id?: string;
}

/** A refusal and the status it is answered with. */
export interface Refused {
  status: number;
  fields: Refusal;
}

/** A typed Workers refusal (connections spec section 2): the fields of `refusal` and `set_by` `control`. */
export const refusal = (status: number, fields: Refusal) => new DetailObjectError(status, { ...fields, set_by: 'control' });

/** The refusal for a hand-off that did not reach a willing orchestrator. */
export function handOffRefusal(failure: Exclude<HandOff, { ok: true }>['failure'], what: string): Refusal {
  const why = {
    not_configured: 'no orchestration service is configured for this deployment (ORCHESTRATOR_URL is unset)',
    unreachable: 'the orchestration service did not answer',
    refused: 'the orchestration service refused the request',
  }[failure];
  return {
    code: `orchestrator_${failure}`,
    reason: 'orchestration_unavailable',
    what,
    why,
    suggested_fix:
      failure === 'not_configured'
        ? 'set ORCHESTRATOR_URL for control and restart it, then try again'
        : 'check the orchestration service (see the workers doctor), then try again',
    rule_reference: RULES,
  };
}

/** A Worker without a published revision; `what` says what did not happen. */
export const notPublished = (what: string, suggested_fix: string): Refusal => ({
  code: 'worker_not_published',
  reason: 'not_published',
  what,
  why: 'the worker has no published revision',
  suggested_fix,
  rule_reference: RULES,
});

export const demoNotSupported = (): Refusal => ({
  code: 'demo_not_supported',
  reason: 'template',
  what: 'the demo run was not started',
  why: 'this template has no demo',
  suggested_fix: 'pick a template whose demo_supported is true',
  rule_reference: RULES,
});

/** The fields of a refusal in the OpenAPI document (the body schema and a run's `failure` use them). */
export const REFUSAL_FIELDS: Record<string, Schema> = {
  code: {
    enum: [
      'worker_not_published',
      'demo_not_supported',
      'environment_unavailable',
      'environment_not_in_plan',
      'run_allowance_exhausted',
      'trial_exhausted',
      'concurrency_limit_reached',
      'worker_concurrency_limit_reached',
      'orchestrator_not_configured',
      'orchestrator_unreachable',
      'orchestrator_refused',
    ],
  },
  reason: { enum: ['not_published', 'template', 'environment', 'entitlement', 'concurrency', 'orchestration_unavailable'] },
  what: text,
  why: text,
  suggested_fix: text,
  fix_action: { const: 'upgrade_plan' },
  rule_reference: text,
  run_id: { type: 'string', description: 'The run recorded as failed, on a refused hand-off.' },
  set_by: { const: 'control' },
};
export const REFUSAL_REQUIRED = ['code', 'reason', 'what', 'why', 'suggested_fix', 'set_by'];

/** A typed Workers refusal (connections spec section 2). */
export const refusalSchema: Schema = { type: 'object', properties: REFUSAL_FIELDS, required: REFUSAL_REQUIRED, additionalProperties: false };
