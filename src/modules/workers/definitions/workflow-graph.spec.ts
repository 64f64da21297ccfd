import { graphErrors } from 'src/modules/workers/definitions/workflow-graph';

const workers = new Set(['wkr_a']);
const step = (step_id: string, depends_on: string[] = [], condition?: string) => ({ step_id, worker_id: 'wkr_a', depends_on, ...(condition ? { condition } : {}) });

describe('workflow graph validation', () => {
  it('accepts a DAG with compiling conditions', () => {
    expect(graphErrors([step('a'), step('b', ['a'], 'steps.a.output.ok'), step('c', ['a', 'b'])], workers)).toEqual([]);
  });

  it('refuses an empty graph', () => {
    expect(graphErrors([], workers)).toEqual([{ loc: ['revision', 'steps'], msg: 'a workflow revision needs at least one step', type: 'value_error' }]);
  });

  it('finds cycles, including self loops', () => {
    expect(graphErrors([step('a', ['c']), step('b', ['a']), step('c', ['b'])], workers)).toEqual([{ loc: ['revision', 'steps'], msg: 'steps form a cycle', type: 'value_error' }]);
    expect(graphErrors([step('a', ['a'])], workers)[0].msg).toBe('steps form a cycle');
  });

  it('names unknown references, duplicate ids, unpublished workers and bad conditions', () => {
    const errors = graphErrors([step('a', ['zz']), { step_id: 'a', worker_id: 'wkr_b' }, step('c', [], 'input.x >')], workers);
    expect(errors.map((e) => [e.loc, e.msg.split(':')[0]])).toEqual([
      [['revision', 'steps', 1, 'step_id'], 'duplicate step_id'],
      [['revision', 'steps', 1, 'worker_id'], 'unknown or unpublished worker'],
      [['revision', 'steps', 0, 'depends_on', 0], 'unknown step reference'],
      [['revision', 'steps', 2, 'condition'], 'condition does not parse'],
    ]);
  });
});
