import { FieldError } from 'src/common/http/errors';
import { compileCondition } from 'src/modules/workers/definitions/condition';

export interface WorkflowStep {
  step_id: string;
  worker_id: string;
  depends_on?: string[];
  condition?: string;
}

/**
 * Everything wrong with a step graph, as field errors under `revision.steps`: no steps, duplicate
 * ids, references to unknown steps, workers that are not published in the workspace, conditions
 * that do not compile, and cycles.
 */
export function graphErrors(steps: WorkflowStep[], publishedWorkers: ReadonlySet<string>): FieldError[] {
  const errors: FieldError[] = [];
  const at = (i: number, ...rest: (string | number)[]) => ['revision', 'steps', i, ...rest];
  if (steps.length === 0) return [{ loc: ['revision', 'steps'], msg: 'a workflow revision needs at least one step', type: 'value_error' }];
  const ids = new Set<string>();
  steps.forEach((step, i) => {
    if (ids.has(step.step_id)) errors.push({ loc: at(i, 'step_id'), msg: 'duplicate step_id', type: 'value_error' });
    ids.add(step.step_id);
    if (!publishedWorkers.has(step.worker_id)) errors.push({ loc: at(i, 'worker_id'), msg: 'unknown or unpublished worker', type: 'value_error' });
  });
  steps.forEach((step, i) => {
    (step.depends_on ?? []).forEach((ref, j) => {
      if (!ids.has(ref)) errors.push({ loc: at(i, 'depends_on', j), msg: 'unknown step reference', type: 'value_error' });
    });
    if (step.condition !== undefined) {
      const reason = compileCondition(step.condition);
      if (reason) errors.push({ loc: at(i, 'condition'), msg: reason, type: 'condition_invalid' });
    }
  });
  if (errors.length === 0 && hasCycle(steps)) errors.push({ loc: ['revision', 'steps'], msg: 'steps form a cycle', type: 'value_error' });
  return errors;
}

function hasCycle(steps: WorkflowStep[]): boolean {
  const edges = new Map(steps.map((s) => [s.step_id, s.depends_on ?? []]));
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (id: string): boolean => {
    if (state.get(id) === 'done') return false;
    if (state.get(id) === 'visiting') return true;
    state.set(id, 'visiting');
    for (const next of edges.get(id) ?? []) if (visit(next)) return true;
    state.set(id, 'done');
    return false;
  };
  return steps.some((s) => visit(s.step_id));
}
