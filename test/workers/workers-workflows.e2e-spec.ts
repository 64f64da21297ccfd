import { createHash } from 'node:crypto';
import { Role } from 'src/platform/access/actions';
import { Operator, startTestApp, TestApp } from 'test/support/app';
import { call, expectAccessMatrix, roleMembers } from 'test/support/access-matrix';
import { canonical, digestOf, mintPassport } from 'test/support/workers';
import { clearWorkerPlan, setWorkerPlan } from 'test/support/factories';

const digest = (rev: { steps: unknown; permitted_trigger_types: unknown }) =>
  `sha256:${createHash('sha256').update(canonical({ permitted_trigger_types: rev.permitted_trigger_types, steps: rev.steps })).digest('hex')}`;

describe('Workflows and their versions', () => {
  let t: TestApp;
  let owner: Operator;
  let members: Record<Role, Operator>;
  let publishedWorker: string;
  let draftWorker: string;
  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.signIn();
    members = await roleMembers(t, owner);
    await mintPassport(t, owner, 'agent');
    const mk = async (slug: string) =>
      (await call(t, 'post', `/api/v1/workspaces/${owner.workspaceId}/workers`, owner, { slug, display_name: slug, agent_passport_id: 'agent' }).expect(201)).body.resource_id;
    publishedWorker = await mk('pub');
    draftWorker = await mk('draft');
    const [rev] = (await call(t, 'get', `/api/v1/workspaces/${owner.workspaceId}/workers/${publishedWorker}/versions`, owner).expect(200)).body.revisions;
    await call(t, 'post', `/api/v1/workspaces/${owner.workspaceId}/workers/${publishedWorker}/versions`, owner, {
      revision_id: rev.revision_id, revision_digest: digestOf(rev), expected_published_revision_id: null,
    }).expect(201);
  });
  afterAll(() => t.close());

  const base = () => `/api/v1/workspaces/${owner.workspaceId}/workflows`;
  let seq = 0;
  const newWorkflow = async () => {
    seq += 1;
    return (await call(t, 'post', base(), members.developer, { slug: `wf-${seq}`, display_name: `Flow ${seq}` }).expect(201)).body.resource_id as string;
  };
  const revisions = async (id: string) => (await call(t, 'get', `${base()}/${id}/versions`, owner).expect(200)).body.revisions;
  const publish = (id: string, rev: { revision_id: string; steps: unknown; permitted_trigger_types: unknown }, expected: string | null = null, op = members.admin) =>
    call(t, 'post', `${base()}/${id}/versions`, op, { revision_id: rev.revision_id, revision_digest: digest(rev), expected_published_revision_id: expected });

  it('creates a workflow with a stepless draft v1 carrying the permitted trigger types', async () => {
    const res = await call(t, 'post', base(), members.developer, { slug: 'nightly', display_name: 'Nightly' }).expect(201);
    expect(res.body).toEqual({
      schema_version: 1,
      resource_id: expect.stringMatching(/^wfl_/),
      before: null,
      after: { lifecycle: 'draft', draft_revision_id: expect.stringMatching(/^wfr_/), revision_number: 1 },
    });
    const [rev] = await revisions(res.body.resource_id);
    expect(rev).toMatchObject({ revision_number: 1, state: 'draft', steps: [], permitted_trigger_types: ['manual'], revision_digest: null });
    const got = await call(t, 'get', `${base()}/${res.body.resource_id}`, members.viewer).expect(200);
    expect(got.body.workflow).toMatchObject({ slug: 'nightly', lifecycle: 'draft', published_revision_id: null });
    const list = await call(t, 'get', base(), members.viewer).expect(200);
    expect(list.body.workflows.map((w: { slug: string }) => w.slug)).toContain('nightly');
    expect(list.body.capabilities.can_author).toBe(false);
    const dup = await call(t, 'post', base(), owner, { slug: 'nightly', display_name: 'Again' }).expect(409);
    expect(dup.body).toEqual({ detail: 'workflow slug already exists' });
  });

  it('takes schedules and webhooks from the entitlement', async () => {
    await setWorkerPlan(t, owner.workspaceId, 'pro');
    try {
      const id = await newWorkflow();
      expect((await revisions(id))[0].permitted_trigger_types).toEqual(['manual', 'schedule', 'webhook']);
    } finally {
      await clearWorkerPlan(t, owner.workspaceId);
    }
  });

  it('refuses to publish a revision without steps', async () => {
    const id = await newWorkflow();
    const res = await publish(id, (await revisions(id))[0]).expect(422);
    expect(res.body.detail).toEqual([{ loc: ['revision', 'steps'], msg: 'a workflow revision needs at least one step', type: 'value_error' }]);
    expect((await revisions(id))[0].state).toBe('draft');
  });

  it('publishes a valid graph whose conditions compile (CEL)', async () => {
    const id = await newWorkflow();
    await call(t, 'patch', `${base()}/${id}`, members.developer, {
      steps: [
        { step_id: 'fetch', worker_id: publishedWorker },
        { step_id: 'review', worker_id: publishedWorker, depends_on: ['fetch'], condition: 'steps.fetch.output.count > 0 && input.priority == "high"' },
      ],
    }).expect(200);
    const [rev] = await revisions(id);
    const res = await publish(id, rev).expect(201);
    expect(res.body).toEqual({
      schema_version: 1,
      resource_id: id,
      before: { lifecycle: 'draft', published_revision_id: null },
      after: { lifecycle: 'published', published_revision_id: rev.revision_id, revision_number: 1, revision_digest: digest(rev) },
    });
    const again = await publish(id, rev).expect(409);
    expect(again.body).toEqual({ detail: 'workflow_revision_already_published' });
    // an edit after publish opens revision 2, published with the live pin
    await call(t, 'patch', `${base()}/${id}`, owner, { steps: [{ step_id: 'only', worker_id: publishedWorker }] }).expect(200);
    const [second] = await revisions(id);
    expect(second.revision_number).toBe(2);
    expect((await publish(id, second, null).expect(409)).body).toEqual({ detail: 'published_revision_moved' });
    await publish(id, second, rev.revision_id).expect(201);
  });

  it('names every graph problem at publish', async () => {
    const id = await newWorkflow();
    await call(t, 'patch', `${base()}/${id}`, owner, {
      steps: [
        { step_id: 'a', worker_id: draftWorker, depends_on: ['ghost'] },
        { step_id: 'b', worker_id: publishedWorker, condition: 'secrets.token == "x"' },
        { step_id: 'c', worker_id: publishedWorker, condition: 'input.x >' },
      ],
    }).expect(200);
    const res = await publish(id, (await revisions(id))[0]).expect(422);
    expect(res.body.detail.map((e: { loc: unknown[]; msg: string }) => [e.loc, e.msg.split(':')[0]])).toEqual([
      [['revision', 'steps', 0, 'worker_id'], 'unknown or unpublished worker'],
      [['revision', 'steps', 0, 'depends_on', 0], 'unknown step reference'],
      [['revision', 'steps', 1, 'condition'], 'unknown variable secrets; use input or steps'],
      [['revision', 'steps', 2, 'condition'], 'condition does not parse'],
    ]);
  });

  it('refuses a cycle', async () => {
    const id = await newWorkflow();
    await call(t, 'patch', `${base()}/${id}`, owner, {
      steps: [
        { step_id: 'a', worker_id: publishedWorker, depends_on: ['b'] },
        { step_id: 'b', worker_id: publishedWorker, depends_on: ['a'] },
      ],
    }).expect(200);
    const res = await publish(id, (await revisions(id))[0]).expect(422);
    expect(res.body.detail).toEqual([{ loc: ['revision', 'steps'], msg: 'steps form a cycle', type: 'value_error' }]);
  });

  it('answers the digest mismatch object', async () => {
    const id = await newWorkflow();
    const [rev] = await revisions(id);
    const res = await call(t, 'post', `${base()}/${id}/versions`, owner, { revision_id: rev.revision_id, revision_digest: `sha256:${'1'.repeat(64)}`, expected_published_revision_id: null }).expect(409);
    expect(res.body).toEqual({ detail: { revision_id: rev.revision_id, expected: digest(rev) } });
  });

  it('validates bodies', async () => {
    const id = await newWorkflow();
    const bad = await call(t, 'patch', `${base()}/${id}`, owner, { steps: [{ step_id: 'A B', worker_id: publishedWorker, extra: 1 }] }).expect(422);
    expect(bad.body.detail.map((e: { loc: unknown[] }) => e.loc)).toEqual(expect.arrayContaining([['body', 'steps', 0, 'step_id'], ['body', 'steps', 0, 'extra']]));
    await call(t, 'post', base(), owner, { slug: 'UP', display_name: 'x' }).expect(422);
    expect((await call(t, 'get', `${base()}/wfl_000000000000000000000000`, owner).expect(404)).body).toEqual({ detail: 'workflow not found' });
    const cursor = await call(t, 'get', `${base()}?cursor=nope`, owner).expect(422);
    expect(cursor.body.detail).toEqual([{ loc: ['query', 'cursor'], msg: 'invalid cursor', type: 'value_error' }]);
  });

  it('lets one of two racing publishes through', async () => {
    const id = await newWorkflow();
    await call(t, 'patch', `${base()}/${id}`, owner, { steps: [{ step_id: 'a', worker_id: publishedWorker }] }).expect(200);
    const [rev] = await revisions(id);
    const results = await Promise.all([publish(id, rev), publish(id, rev)]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
  });

  describe('authorization', () => {
    it('create', () => expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => `/api/v1/workspaces/${w}/workflows`, body: { slug: 'm', display_name: 'm' }, minRole: 'developer', read: false }));
    it('list', () => expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `/api/v1/workspaces/${w}/workflows`, minRole: 'viewer', read: true }));
    it('versions and publish', async () => {
      const id = await newWorkflow();
      await expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `/api/v1/workspaces/${w}/workflows/${id}/versions`, minRole: 'viewer', read: true });
      await expectAccessMatrix(t, owner, members, { method: 'patch', path: (w) => `/api/v1/workspaces/${w}/workflows/${id}`, body: { steps: [] }, minRole: 'developer', read: false });
      const [rev] = await revisions(id);
      await expectAccessMatrix(t, owner, members, {
        method: 'post', path: (w) => `/api/v1/workspaces/${w}/workflows/${id}/versions`, body: { revision_id: rev.revision_id, revision_digest: digest(rev), expected_published_revision_id: null }, minRole: 'admin', read: false,
      });
    });
  });
});
