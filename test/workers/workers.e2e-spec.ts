import { Role } from 'src/platform/access/actions';
import { Operator, startTestApp, TestApp } from 'test/support/app';
import { call, expectAccessMatrix, roleMembers } from 'test/support/access-matrix';
import { digestOf, mintPassport } from 'test/support/workers';
import { retireWorker, setWorkspaceFlag } from 'test/support/factories';

const SECRET = ['sk-', 'proj-', 'Xk2m9PqL4vR7tY1wZ8bN3cF6hJ0dS5aG'].join('');

describe('Worker drafts, definitions and revisions', () => {
  let t: TestApp;
  let owner: Operator;
  let members: Record<Role, Operator>;
  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.signIn();
    members = await roleMembers(t, owner);
    await mintPassport(t, owner, 'agent-1');
  });
  afterAll(() => t.close());

  const ws = () => owner.workspaceId;
  const base = () => `/api/v1/workspaces/${ws()}`;
  const setAssistant = (on: boolean) => setWorkspaceFlag(t, ws(), 'assistant_enabled', on);
  let seq = 0;
  const newWorker = async (extra: object = {}) => {
    seq += 1;
    const res = await call(t, 'post', `${base()}/workers`, members.developer, { slug: `w-${seq}`, display_name: `Worker ${seq}`, agent_passport_id: 'agent-1', ...extra });
    expect(res.status).toBe(201);
    return res.body.resource_id as string;
  };
  const versions = async (workerId: string) => (await call(t, 'get', `${base()}/workers/${workerId}/versions`, owner).expect(200)).body.revisions;

  describe('POST /worker-drafts', () => {
    it('answers 409 with the denied object while the assistant is off, and writes nothing', async () => {
      const res = await call(t, 'post', `${base()}/worker-drafts`, members.developer, { job_description: 'Review pull requests' }).expect(409);
      expect(res.body).toEqual({
        detail: { code: 'denied', message: 'the workspace assistant is not enabled for this workspace', href: '/docs/workers.md#enabling-the-workspace-assistant' },
      });
      expect(await t.db.query(`SELECT 1 FROM workers WHERE workspace_id = $1`, [ws()])).toEqual([]);
    });

    it('proposes a Worker once the assistant is on; the proposal grants nothing', async () => {
      await setAssistant(true);
      try {
        const res = await call(t, 'post', `${base()}/worker-drafts`, members.developer, {
          job_description: 'Review pull requests in the repository\nComment on failing tests.',
          execution_mode: 'safe',
        }).expect(200);
        expect(res.body).toMatchObject({
          schema_version: 1,
          workspace_id: ws(),
          authority: 'proposal_only',
          proposal: {
            slug: 'review-pull-requests-in-the-repository',
            display_name: 'Review pull requests in the repository',
            template_id: null,
            environment_classes: ['development'],
            execution_mode: 'safe',
            permission_preset: 'safe_writes',
            limits: { run_timeout_seconds: 600 },
          },
          permitted_environment_classes: ['development', 'research', 'code'],
          notes: [],
        });
        expect(await t.db.query(`SELECT 1 FROM workers WHERE workspace_id = $1`, [ws()])).toEqual([]);
      } finally {
        await setAssistant(false);
      }
    });

    it('assembles the environment classes itself: a template class outside the plan is replaced', async () => {
      await setAssistant(true);
      try {
        const res = await call(t, 'post', `${base()}/worker-drafts`, owner, { job_description: 'Fill the vendor form', template_id: 'tpl_form_filler' }).expect(200);
        expect(res.body.proposal).toMatchObject({ template_id: 'tpl_form_filler', environment_classes: ['code'], execution_mode: 'safe' });
        expect(res.body.notes).toEqual(['the browser environment is not available to this workspace; the proposal uses code']);
      } finally {
        await setAssistant(false);
      }
    });

    it('refuses environment classes stated in the body and other validation failures with 422', async () => {
      await setAssistant(true);
      try {
        const extra = await call(t, 'post', `${base()}/worker-drafts`, owner, { job_description: 'x', environment_classes: ['browser'] }).expect(422);
        expect(extra.body.detail).toEqual([{ loc: ['body', 'environment_classes'], msg: 'extra fields not permitted', type: 'extra_forbidden' }]);
        const empty = await call(t, 'post', `${base()}/worker-drafts`, owner, { job_description: '' }).expect(422);
        expect(empty.body.detail[0]).toMatchObject({ loc: ['body', 'job_description'], type: 'string_too_short' });
        const long = await call(t, 'post', `${base()}/worker-drafts`, owner, { job_description: 'a'.repeat(4001) }).expect(422);
        expect(long.body.detail[0]).toMatchObject({ loc: ['body', 'job_description'], type: 'string_too_long' });
        await call(t, 'post', `${base()}/worker-drafts`, owner, { job_description: 'a'.repeat(4000) }).expect(200);
        const missing = await call(t, 'post', `${base()}/worker-drafts`, owner, {}).expect(422);
        expect(missing.body.detail).toEqual([{ loc: ['body', 'job_description'], msg: 'field required', type: 'missing' }]);
        const mode = await call(t, 'post', `${base()}/worker-drafts`, owner, { job_description: 'x', execution_mode: 'reckless' }).expect(422);
        expect(mode.body.detail[0]).toMatchObject({ loc: ['body', 'execution_mode'], type: 'enum' });
        const template = await call(t, 'post', `${base()}/worker-drafts`, owner, { job_description: 'x', template_id: 'tpl_nope' }).expect(422);
        expect(template.body.detail).toEqual([{ loc: ['body', 'template_id'], msg: 'unknown template', type: 'value_error' }]);
      } finally {
        await setAssistant(false);
      }
    });

    it('refuses a job description carrying a credential, naming the field and never echoing it', async () => {
      const res = await call(t, 'post', `${base()}/worker-drafts`, owner, { job_description: `Call the API with ${SECRET} every hour` }).expect(422);
      expect(res.body.detail).toEqual([
        {
          loc: ['body', 'job_description'],
          msg: 'field contains credential material (a provider API key); remove it and keep secrets in a connection or session profile',
          type: 'credential_detected',
        },
      ]);
      expect(JSON.stringify(res.body)).not.toContain(SECRET);
    });

    it('authorization matrix', () =>
      expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => `/api/v1/workspaces/${w}/worker-drafts`, body: { job_description: 'x' }, minRole: 'developer', read: false }));
  });

  describe('POST /workers', () => {
    it('creates a Worker and its draft with the spec defaults, answering the created ids', async () => {
      const res = await call(t, 'post', `${base()}/workers`, members.developer, {
        slug: 'pr-reviewer',
        display_name: 'PR reviewer',
        description: 'Reviews pull requests',
        agent_passport_id: 'agent-1',
        template_id: 'tpl_code_review',
        instructions: 'Review every pull request.',
      }).expect(201);
      expect(res.body).toEqual({
        schema_version: 1,
        resource_id: expect.stringMatching(/^wkr_[0-9a-f]{24}$/),
        before: null,
        after: { lifecycle: 'draft', draft_revision_id: expect.stringMatching(/^wrv_[0-9a-f]{24}$/), revision_number: 1 },
      });
      const workerId = res.body.resource_id;
      const got = await call(t, 'get', `${base()}/workers/${workerId}`, members.viewer).expect(200);
      expect(got.body.worker).toEqual({
        schema_version: 1,
        worker_id: workerId,
        workspace_id: ws(),
        env: 'dev',
        slug: 'pr-reviewer',
        display_name: 'PR reviewer',
        description: 'Reviews pull requests',
        agent_passport_id: 'agent-1',
        lifecycle: 'draft',
        draft_revision_id: res.body.after.draft_revision_id,
        published_revision_id: null,
        latest_revision_number: 1,
        template_id: 'tpl_code_review',
        created_by: { kind: 'operator', id: members.developer.userId, display_name: members.developer.email },
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      expect(got.body.capabilities.can_read).toBe(true);
      const [revision] = await versions(workerId);
      expect(revision).toMatchObject({
        revision_id: res.body.after.draft_revision_id,
        state: 'draft',
        revision_digest: null,
        revision_number: 1,
        instructions: 'Review every pull request.',
        environment_requests: [{ environment_class: 'code' }],
        permission_preset: { preset: 'safe_writes', policy_revision_id: expect.stringMatching(/^ppr_[0-9a-f]{24}$/) },
        execution_mode: 'balanced',
        limits: {
          run_timeout_seconds: 600,
          approval_window_seconds: 900,
          infrastructure_retries: 2,
          ambiguous_effect_retries: 0,
          artifact_retention_days: 7,
          concurrency: 1,
          network_policy: 'allowlist',
          session_mode: 'ephemeral',
          production_writes_require_approval: true,
        },
        allowed_capabilities: [],
        ui_actions: [],
      });
      expect(revision).not.toHaveProperty('runtime_adapter');
    });

    it('answers 409 for a slug already taken, and keeps one row', async () => {
      await call(t, 'post', `${base()}/workers`, owner, { slug: 'dup', display_name: 'A', agent_passport_id: 'agent-1' }).expect(201);
      const res = await call(t, 'post', `${base()}/workers`, owner, { slug: 'dup', display_name: 'B', agent_passport_id: 'agent-1' }).expect(409);
      expect(res.body).toEqual({ detail: 'worker slug already exists' });
      expect(await t.db.query(`SELECT display_name FROM workers WHERE workspace_id = $1 AND slug = 'dup'`, [ws()])).toEqual([{ display_name: 'A' }]);
    });

    it('claims a slug once under concurrent creates', async () => {
      const results = await Promise.all(
        [1, 2, 3].map(() => call(t, 'post', `${base()}/workers`, owner, { slug: 'race', display_name: 'Race', agent_passport_id: 'agent-1' })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    });

    it('needs an agent passport that is an active virtual key of the workspace', async () => {
      const key = await mintPassport(t, owner, 'agent-revoked');
      await call(t, 'post', `${base()}/keys/${key.key_id}/revoke`, owner).expect(200);
      // The keys module's status rule: a key past its expiry is no passport either.
      await call(t, 'post', `${base()}/keys`, owner, { agent_id: 'agent-expired', expires_at: '2020-01-01T00:00:00Z' }).expect(201);
      for (const agent of ['agent-revoked', 'agent-expired', 'agent-unknown']) {
        const res = await call(t, 'post', `${base()}/workers`, owner, { slug: 'p', display_name: 'P', agent_passport_id: agent }).expect(422);
        expect(res.body.detail).toEqual([
          { loc: ['body', 'agent_passport_id'], msg: 'agent_passport_id must be the agent_id of an active virtual key of this workspace', type: 'value_error' },
        ]);
      }
      const other = await t.signIn();
      await mintPassport(t, other, 'foreign-agent');
      await call(t, 'post', `${base()}/workers`, owner, { slug: 'p', display_name: 'P', agent_passport_id: 'foreign-agent' }).expect(422);
    });

    it('validates the body', async () => {
      const post = (body: object) => call(t, 'post', `${base()}/workers`, owner, { slug: 'v', display_name: 'V', agent_passport_id: 'agent-1', ...body });
      const cases: [object, (string | number)[], string][] = [
        [{ slug: 'Bad_Slug' }, ['body', 'slug'], 'string_pattern_mismatch'],
        [{ slug: 'a'.repeat(65) }, ['body', 'slug'], 'string_too_long'],
        [{ display_name: '' }, ['body', 'display_name'], 'string_too_short'],
        [{ display_name: 'a'.repeat(201) }, ['body', 'display_name'], 'string_too_long'],
        [{ description: 'a'.repeat(2001) }, ['body', 'description'], 'string_too_long'],
        [{ instructions: 'a'.repeat(20001) }, ['body', 'instructions'], 'string_too_long'],
        [{ environment_classes: [] }, ['body', 'environment_classes'], 'too_short'],
        [{ environment_classes: Array(9).fill('code') }, ['body', 'environment_classes'], 'too_long'],
        [{ environment_classes: ['quantum'] }, ['body', 'environment_classes'], 'enum'],
        [{ template_id: 'tpl_nope' }, ['body', 'template_id'], 'value_error'],
        [{ extra: 1 }, ['body', 'extra'], 'extra_forbidden'],
      ];
      for (const [body, loc, type] of cases) {
        const res = await post(body).expect(422);
        expect(res.body.detail).toContainEqual(expect.objectContaining({ loc, type }));
      }
      const missing = await call(t, 'post', `${base()}/workers`, owner, { display_name: 'V' }).expect(422);
      expect(missing.body.detail.map((e: { loc: string[] }) => e.loc)).toEqual([['body', 'slug'], ['body', 'agent_passport_id']]);
      expect(await t.db.query(`SELECT 1 FROM workers WHERE workspace_id = $1 AND slug = 'v'`, [ws()])).toEqual([]);
    });

    it('screens instructions, description and display name for credentials', async () => {
      const res = await call(t, 'post', `${base()}/workers`, owner, {
        slug: 's', display_name: 'S', agent_passport_id: 'agent-1', description: 'login with password=hunter2', instructions: `key ${SECRET}`,
      }).expect(422);
      expect(res.body.detail.map((e: { loc: string[]; type: string }) => [e.loc, e.type])).toEqual([
        [['body', 'description'], 'credential_detected'],
        [['body', 'instructions'], 'credential_detected'],
      ]);
      expect(JSON.stringify(res.body)).not.toMatch(/hunter2|Xk2m9PqL/);
    });

    it('authorization matrix', () =>
      expectAccessMatrix(t, owner, members, {
        method: 'post', path: (w) => `/api/v1/workspaces/${w}/workers`, body: { slug: 'm', display_name: 'M', agent_passport_id: 'agent-1' }, minRole: 'developer', read: false,
      }));
  });

  describe('GET /workers', () => {
    it('lists with the lifecycle filter, keyset pages and the capabilities block', async () => {
      const other = await t.signIn();
      await mintPassport(t, other, 'a');
      await call(t, 'post', `/api/v1/workspaces/${other.workspaceId}/workers`, other, { slug: 'one', display_name: 'One', agent_passport_id: 'a' }).expect(201);
      await call(t, 'post', `/api/v1/workspaces/${other.workspaceId}/workers`, other, { slug: 'two', display_name: 'Two', agent_passport_id: 'a' }).expect(201);
      const first = await call(t, 'get', `/api/v1/workspaces/${other.workspaceId}/workers?limit=1`, other).expect(200);
      expect(first.body.workers.map((w: { slug: string }) => w.slug)).toEqual(['one']);
      expect(first.body.capabilities.can_publish).toBe(true);
      const second = await call(t, 'get', `/api/v1/workspaces/${other.workspaceId}/workers?limit=1&cursor=${first.body.next_cursor}`, other).expect(200);
      expect(second.body.workers.map((w: { slug: string }) => w.slug)).toEqual(['two']);
      expect(second.body.next_cursor).toBeNull();
      const published = await call(t, 'get', `/api/v1/workspaces/${other.workspaceId}/workers?lifecycle=published`, other).expect(200);
      expect(published.body.workers).toEqual([]);
      const bad = await call(t, 'get', `/api/v1/workspaces/${other.workspaceId}/workers?lifecycle=gone`, other).expect(422);
      expect(bad.body.detail[0]).toMatchObject({ loc: ['query', 'lifecycle'], type: 'enum' });
      const cursor = await call(t, 'get', `/api/v1/workspaces/${other.workspaceId}/workers?cursor=nope`, other).expect(422);
      expect(cursor.body.detail).toEqual([{ loc: ['query', 'cursor'], msg: 'invalid cursor', type: 'value_error' }]);
    });

    it('answers 404 worker not found for another workspace worker', async () => {
      const other = await t.signIn();
      await mintPassport(t, other, 'a');
      const created = await call(t, 'post', `/api/v1/workspaces/${other.workspaceId}/workers`, other, { slug: 'x', display_name: 'X', agent_passport_id: 'a' }).expect(201);
      const res = await call(t, 'get', `${base()}/workers/${created.body.resource_id}`, owner).expect(404);
      expect(res.body).toEqual({ detail: 'worker not found' });
      await call(t, 'get', `${base()}/workers/${created.body.resource_id}/versions`, owner).expect(404);
    });

    it('authorization matrix', () => expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `/api/v1/workspaces/${w}/workers`, minRole: 'viewer', read: true }));
  });

  describe('PATCH /workers/{id}', () => {
    it('edits the open draft and answers the changed ids', async () => {
      const workerId = await newWorker();
      const [draft] = await versions(workerId);
      const res = await call(t, 'patch', `${base()}/workers/${workerId}`, members.developer, {
        body: { runtime_adapter: 'claude-code', environment_requests: [{ environment_class: 'browser' }, { environment_class: 'code' }], output_contract: { format: 'markdown' } },
        execution_mode: 'safe',
      }).expect(200);
      expect(res.body).toEqual({
        schema_version: 1,
        resource_id: workerId,
        before: { draft_revision_id: draft.revision_id, revision_number: 1 },
        after: { draft_revision_id: draft.revision_id, revision_number: 1 },
      });
      const [edited] = await versions(workerId);
      expect(edited).toMatchObject({
        runtime_adapter: 'claude-code',
        environment_requests: [{ environment_class: 'browser' }, { environment_class: 'code' }],
        output_contract: { format: 'markdown' },
        execution_mode: 'safe',
        ui_actions: ['browser.navigate', 'browser.fill_form'],
      });
      await call(t, 'patch', `${base()}/workers/${workerId}`, owner, { body: { runtime_adapter: null } }).expect(200);
      expect((await versions(workerId))[0]).not.toHaveProperty('runtime_adapter');
    });

    it('never edits a published revision: an edit after publish opens revision 2', async () => {
      const workerId = await newWorker({ instructions: 'v1' });
      const [draft] = await versions(workerId);
      await call(t, 'post', `${base()}/workers/${workerId}/versions`, owner, {
        revision_id: draft.revision_id, revision_digest: digestOf(draft), expected_published_revision_id: null,
      }).expect(201);
      const res = await call(t, 'patch', `${base()}/workers/${workerId}`, owner, { body: { instructions: 'v2' } }).expect(200);
      expect(res.body.before).toEqual({ draft_revision_id: null, revision_number: null });
      expect(res.body.after).toEqual({ draft_revision_id: expect.stringMatching(/^wrv_/), revision_number: 2 });
      const [second, first] = await versions(workerId);
      expect([second.state, second.instructions, second.revision_number]).toEqual(['draft', 'v2', 2]);
      expect([first.state, first.instructions, first.revision_digest]).toEqual(['published', 'v1', digestOf(draft)]);
      const worker = (await call(t, 'get', `${base()}/workers/${workerId}`, owner).expect(200)).body.worker;
      expect(worker).toMatchObject({ lifecycle: 'published', published_revision_id: first.revision_id, draft_revision_id: second.revision_id, latest_revision_number: 2 });
    });

    it('validates and screens the body', async () => {
      const workerId = await newWorker();
      const secret = await call(t, 'patch', `${base()}/workers/${workerId}`, owner, { body: { instructions: `use ${SECRET}` } }).expect(422);
      expect(secret.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'body', 'instructions'], type: 'credential_detected' })]);
      const extra = await call(t, 'patch', `${base()}/workers/${workerId}`, owner, { body: { permission_preset: 'custom' } }).expect(422);
      expect(extra.body.detail).toEqual([{ loc: ['body', 'body', 'permission_preset'], msg: 'extra fields not permitted', type: 'extra_forbidden' }]);
      const env = await call(t, 'patch', `${base()}/workers/${workerId}`, owner, { body: { environment_requests: [{ environment_class: 'moon' }] } }).expect(422);
      expect(env.body.detail[0]).toMatchObject({ loc: ['body', 'body', 'environment_requests', 0, 'environment_class'], type: 'enum' });
      const none = await call(t, 'patch', `${base()}/workers/${workerId}`, owner, { body: { environment_requests: null } }).expect(422);
      expect(none.body.detail).toEqual([{ loc: ['body', 'body', 'environment_requests'], msg: 'a worker needs at least one environment class', type: 'value_error' }]);
      const profile = await call(t, 'patch', `${base()}/workers/${workerId}`, owner, { body: { session_profile_ids: ['wsp_missing'] } }).expect(422);
      expect(profile.body.detail).toEqual([{ loc: ['body', 'body', 'session_profile_ids', 0], msg: 'unknown or revoked session profile', type: 'value_error' }]);
      const mode = await call(t, 'patch', `${base()}/workers/${workerId}`, owner, { execution_mode: 'yolo' }).expect(422);
      expect(mode.body.detail[0]).toMatchObject({ loc: ['body', 'execution_mode'], type: 'enum' });
      await call(t, 'patch', `${base()}/workers/wkr_000000000000000000000000`, owner, { execution_mode: 'safe' }).expect(404);
    });

    it('answers 409 worker is retired, leaving the revisions alone', async () => {
      const workerId = await newWorker();
      await retireWorker(t, workerId);
      const res = await call(t, 'patch', `${base()}/workers/${workerId}`, owner, { execution_mode: 'safe' }).expect(409);
      expect(res.body).toEqual({ detail: 'worker is retired' });
      expect((await versions(workerId))[0].execution_mode).toBe('balanced');
    });

    it('authorization matrix', async () => {
      const workerId = await newWorker();
      await expectAccessMatrix(t, owner, members, { method: 'patch', path: (w) => `/api/v1/workspaces/${w}/workers/${workerId}`, body: { execution_mode: 'safe' }, minRole: 'developer', read: false });
    });
  });

  describe('POST /workers/{id}/versions (publish)', () => {
    it('publishes with the three pins and the digest computed independently', async () => {
      const workerId = await newWorker({ instructions: 'Do the job.' });
      const [draft] = await versions(workerId);
      const res = await call(t, 'post', `${base()}/workers/${workerId}/versions`, members.admin, {
        revision_id: draft.revision_id, revision_digest: digestOf(draft), expected_published_revision_id: null,
      }).expect(201);
      expect(res.body).toEqual({
        schema_version: 1,
        resource_id: workerId,
        before: { lifecycle: 'draft', published_revision_id: null },
        after: {
          lifecycle: 'published',
          published_revision_id: draft.revision_id,
          revision_number: 1,
          revision_digest: digestOf(draft),
          permission_policy_revision_id: draft.permission_preset.policy_revision_id,
        },
      });
      const [published] = await versions(workerId);
      expect(published).toMatchObject({ state: 'published', revision_digest: digestOf(draft), published_at: expect.any(String) });

      // a second publish moves the live revision and supersedes the first
      await call(t, 'patch', `${base()}/workers/${workerId}`, owner, { execution_mode: 'autonomous' }).expect(200);
      const [second] = await versions(workerId);
      const again = await call(t, 'post', `${base()}/workers/${workerId}/versions`, owner, {
        revision_id: second.revision_id, revision_digest: digestOf(second), expected_published_revision_id: draft.revision_id,
      }).expect(201);
      expect(again.body.before).toEqual({ lifecycle: 'published', published_revision_id: draft.revision_id });
      expect((await versions(workerId)).map((r: { state: string }) => r.state)).toEqual(['published', 'superseded']);
    });

    it('answers the digest mismatch object carrying revision_id and expected, and publishes nothing', async () => {
      const workerId = await newWorker();
      const [draft] = await versions(workerId);
      const res = await call(t, 'post', `${base()}/workers/${workerId}/versions`, owner, {
        revision_id: draft.revision_id, revision_digest: `sha256:${'0'.repeat(64)}`, expected_published_revision_id: null,
      }).expect(409);
      expect(res.body).toEqual({ detail: { revision_id: draft.revision_id, expected: digestOf(draft) } });
      expect((await versions(workerId))[0].state).toBe('draft');
    });

    it('answers published_revision_moved when the live revision is not the one pinned', async () => {
      const workerId = await newWorker();
      const [draft] = await versions(workerId);
      const res = await call(t, 'post', `${base()}/workers/${workerId}/versions`, owner, {
        revision_id: draft.revision_id, revision_digest: digestOf(draft), expected_published_revision_id: 'wrv_000000000000000000000000',
      }).expect(409);
      expect(res.body).toEqual({ detail: 'published_revision_moved' });
    });

    it('answers worker_revision_already_published for a revision no longer a draft', async () => {
      const workerId = await newWorker();
      const [draft] = await versions(workerId);
      const pins = { revision_id: draft.revision_id, revision_digest: digestOf(draft), expected_published_revision_id: null };
      await call(t, 'post', `${base()}/workers/${workerId}/versions`, owner, pins).expect(201);
      const res = await call(t, 'post', `${base()}/workers/${workerId}/versions`, owner, pins).expect(409);
      expect(res.body).toEqual({ detail: 'worker_revision_already_published' });
    });

    it('lets exactly one of two racing publishes through', async () => {
      const workerId = await newWorker();
      const [draft] = await versions(workerId);
      const pins = { revision_id: draft.revision_id, revision_digest: digestOf(draft), expected_published_revision_id: null };
      const results = await Promise.all([1, 2].map(() => call(t, 'post', `${base()}/workers/${workerId}/versions`, owner, pins)));
      expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
    });

    it('validates the pins', async () => {
      const workerId = await newWorker();
      const [draft] = await versions(workerId);
      const missing = await call(t, 'post', `${base()}/workers/${workerId}/versions`, owner, { revision_id: draft.revision_id, revision_digest: digestOf(draft) }).expect(422);
      expect(missing.body.detail).toEqual([{ loc: ['body', 'expected_published_revision_id'], msg: 'field required', type: 'missing' }]);
      const digest = await call(t, 'post', `${base()}/workers/${workerId}/versions`, owner, { revision_id: draft.revision_id, revision_digest: 'abc', expected_published_revision_id: null }).expect(422);
      expect(digest.body.detail[0]).toMatchObject({ loc: ['body', 'revision_digest'], type: 'string_pattern_mismatch' });
      const unknown = await call(t, 'post', `${base()}/workers/${workerId}/versions`, owner, {
        revision_id: 'wrv_000000000000000000000000', revision_digest: digestOf(draft), expected_published_revision_id: null,
      }).expect(404);
      expect(unknown.body).toEqual({ detail: 'revision not found' });
    });

    it('authorization matrix (admin)', async () => {
      const workerId = await newWorker();
      const [draft] = await versions(workerId);
      await expectAccessMatrix(t, owner, members, {
        method: 'post',
        path: (w) => `/api/v1/workspaces/${w}/workers/${workerId}/versions`,
        body: { revision_id: draft.revision_id, revision_digest: digestOf(draft), expected_published_revision_id: null },
        minRole: 'admin',
        read: false,
      });
      expect((await versions(workerId))[0].state).toBe('draft');
    });

    it('versions list: authorization matrix', async () => {
      const workerId = await newWorker();
      await expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `/api/v1/workspaces/${w}/workers/${workerId}/versions`, minRole: 'viewer', read: true });
    });
  });
});
