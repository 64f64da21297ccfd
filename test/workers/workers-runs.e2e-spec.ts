import { Role } from 'src/platform/access/actions';
import { verifyServiceToken } from 'test/support/service-token';
import { Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { OrchestratorEmulator } from 'test/support/orchestrator-emulator';
import { call, expectAccessMatrix, roleMembers } from 'test/support/access-matrix';
import { digestOf, mintPassport } from 'test/support/workers';
import { cancelActiveWorkerRuns, deleteWorkerRuns, seedRunArtifacts, seedWorkerRuns, setWorkerPlan, setWorkerRunStatus } from 'test/support/factories';

/** A published worker in `op`'s workspace. */
async function publishedWorker(t: TestApp, op: Operator, slug: string, extra: object = {}): Promise<string> {
  const base = `/api/v1/workspaces/${op.workspaceId}`;
  const id = (await call(t, 'post', `${base}/workers`, op, { slug, display_name: slug, agent_passport_id: 'agent', ...extra }).expect(201)).body.resource_id;
  const [rev] = (await call(t, 'get', `${base}/workers/${id}/versions`, op).expect(200)).body.revisions;
  await call(t, 'post', `${base}/workers/${id}/versions`, op, { revision_id: rev.revision_id, revision_digest: digestOf(rev), expected_published_revision_id: null }).expect(201);
  return id;
}

describe('runs without an orchestrator', () => {
  let t: TestApp;
  let owner: Operator;
  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.signIn();
    await mintPassport(t, owner, 'agent');
  });
  afterAll(() => t.close());

  it('records the run, answers the typed 503 refusal and keeps the run failed with its failure object', async () => {
    const workerId = await publishedWorker(t, owner, 'w');
    const res = await call(t, 'post', `/api/v1/workspaces/${owner.workspaceId}/worker-runs`, owner, { worker_id: workerId }).expect(503);
    expect(res.body).toEqual({
      detail: {
        code: 'orchestrator_not_configured',
        reason: 'orchestration_unavailable',
        what: 'the run was recorded as failed and did not start',
        why: 'no orchestration service is configured for this deployment (ORCHESTRATOR_URL is unset)',
        suggested_fix: 'set ORCHESTRATOR_URL for control and restart it, then try again',
        rule_reference: 'docs/workers.md#runs',
        run_id: expect.stringMatching(/^run_/),
        set_by: 'control',
      },
    });
    const run = (await call(t, 'get', `/api/v1/workspaces/${owner.workspaceId}/worker-runs/${res.body.detail.run_id}`, owner).expect(200)).body.run;
    expect(run).toMatchObject({ status: 'failed', worker_id: workerId, failure: { code: 'orchestrator_not_configured', set_by: 'control' }, ended_at: expect.any(String) });
    // a failed hand-off does not use up the allowance or hold a concurrency slot
    const ent = await call(t, 'get', `/api/v1/workspaces/${owner.workspaceId}/workers-entitlements`, owner).expect(200);
    expect(ent.body.usage).toMatchObject({ runs_started: 0, active_runs: 0 });
    await call(t, 'post', `/api/v1/workspaces/${owner.workspaceId}/worker-runs`, owner, { worker_id: workerId }).expect(503);
  });

  it('refuses a demo run the same way', async () => {
    const res = await call(t, 'post', `/api/v1/workspaces/${owner.workspaceId}/worker-demo-runs`, owner, { template_id: 'tpl_code_review' }).expect(503);
    expect(res.body.detail).toMatchObject({ code: 'orchestrator_not_configured', set_by: 'control' });
    const list = await call(t, 'get', `/api/v1/workspaces/${owner.workspaceId}/worker-runs?status=failed`, owner).expect(200);
    expect(list.body.runs[0]).toMatchObject({ kind: 'demo', template_id: 'tpl_code_review', status: 'failed' });
  });

  it('the estimate names the refusal a start would meet', async () => {
    const workerId = await publishedWorker(t, owner, 'est');
    const res = await call(t, 'post', `/api/v1/workspaces/${owner.workspaceId}/run-estimates`, owner, { worker_id: workerId }).expect(200);
    expect(res.body).toMatchObject({
      kind: 'run', worker_id: workerId, environment_classes: ['code'], timeout_seconds: 600, max_attempts: 3, would_start: false,
      allowance_remaining: { kind: 'limited', value: 50 }, refusal: { code: 'orchestrator_not_configured', set_by: 'control' },
    });
    const bad = await call(t, 'post', `/api/v1/workspaces/${owner.workspaceId}/run-estimates`, owner, {}).expect(422);
    expect(bad.body.detail).toEqual([{ loc: ['body', 'worker_id'], msg: 'provide exactly one of worker_id or template_id', type: 'value_error' }]);
  });
});

describe('runs with an unreachable orchestrator', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ ORCHESTRATOR_URL: 'http://127.0.0.1:9' });
  });
  afterAll(() => t.close());

  it('answers the typed 503 rather than a 500 and keeps the run failed', async () => {
    const op = await t.signIn();
    await mintPassport(t, op, 'agent');
    const workerId = await publishedWorker(t, op, 'w');
    const res = await call(t, 'post', `/api/v1/workspaces/${op.workspaceId}/worker-runs`, op, { worker_id: workerId }).expect(503);
    expect(res.body.detail).toMatchObject({ code: 'orchestrator_unreachable', why: 'the orchestration service did not answer', set_by: 'control' });
    const stored = await t.db.query(`SELECT status, failure->>'code' AS code FROM worker_runs WHERE id = $1`, [res.body.detail.run_id]);
    expect(stored).toEqual([{ status: 'failed', code: 'orchestrator_unreachable' }]);
  });
});

describe('runs with an orchestrator', () => {
  let t: TestApp;
  let orchestrator: OrchestratorEmulator;
  let owner: Operator;
  let members: Record<Role, Operator>;
  let workerId: string;
  beforeAll(async () => {
    orchestrator = await OrchestratorEmulator.start();
    t = await startTestApp({ ORCHESTRATOR_URL: orchestrator.url });
    owner = await t.signIn();
    members = await roleMembers(t, owner);
    await mintPassport(t, owner, 'agent');
    workerId = await publishedWorker(t, owner, 'main', { instructions: 'Do it.' });
    await setWorkerPlan(t, owner.workspaceId, 'team');
  });
  afterAll(async () => {
    await t.close();
    await orchestrator.stop();
  });

  const base = () => `/api/v1/workspaces/${owner.workspaceId}`;
  const cancelAll = () => cancelActiveWorkerRuns(t, owner.workspaceId);
  beforeEach(async () => {
    orchestrator.refuse = false;
    await cancelAll();
  });

  it('hands the complete run input to the orchestrator and answers the queued run', async () => {
    const profile = (await call(t, 'post', `${base()}/worker-session-profiles`, owner, { name: 'crm', environment_class: 'code' }).expect(201)).body;
    const before = orchestrator.calls.length;
    const res = await call(t, 'post', `${base()}/worker-runs`, members.developer, { worker_id: workerId, input: { ticket: 42 }, session_profile_id: profile.session_profile_id }).expect(201);
    expect(res.body.run).toMatchObject({ status: 'queued', kind: 'run', worker_id: workerId, environment_classes: ['code'], session_profile_id: profile.session_profile_id, failure: null });
    const handOff = orchestrator.calls.slice(before).find((c) => c.path === '/v1/runs')!;
    expect(verifyServiceToken(handOff.authorization!.replace('Bearer ', ''), SERVICE_SECRET, 'control', 'orchestrator')).toBe(true);
    const [rev] = (await call(t, 'get', `${base()}/workers/${workerId}/versions`, owner).expect(200)).body.revisions;
    expect(handOff.body).toEqual({
      schema_version: 1,
      run_id: res.body.run.run_id,
      workspace_id: owner.workspaceId,
      env: 'dev',
      kind: 'run',
      worker: {
        worker_id: workerId, slug: 'main', agent_passport_id: 'agent', revision_id: rev.revision_id, revision_number: 1, revision_digest: rev.revision_digest,
        body: { instructions: 'Do it.', environment_requests: [{ environment_class: 'code' }] },
      },
      template: null,
      execution_mode: expect.objectContaining({ mode: 'balanced', approval_requirements: expect.any(Array) }),
      permission_preset: rev.permission_preset,
      limits: rev.limits,
      capabilities: { allowed_capabilities: rev.allowed_capabilities, ui_actions: rev.ui_actions },
      environment: { classes: ['code'], network_policy: 'allowlist', session_mode: 'ephemeral' },
      session_profile: profile,
      input: { ticket: 42 },
    });
    const ent = await call(t, 'get', `${base()}/workers-entitlements`, owner).expect(200);
    expect(ent.body.usage).toMatchObject({ runs_started: 1, active_runs: 1, active_environments: 1 });
  });

  it('refuses a second concurrent run of a worker whose concurrency is one, recording nothing', async () => {
    await call(t, 'post', `${base()}/worker-runs`, owner, { worker_id: workerId }).expect(201);
    const count = async () => (await t.db.query(`SELECT count(*)::int AS n FROM worker_runs WHERE workspace_id = $1`, [owner.workspaceId]))[0].n;
    const before = await count();
    const res = await call(t, 'post', `${base()}/worker-runs`, owner, { worker_id: workerId }).expect(409);
    expect(res.body.detail).toMatchObject({ code: 'worker_concurrency_limit_reached', set_by: 'control' });
    expect(await count()).toBe(before);
  });

  it('admits exactly one of racing starts', async () => {
    const results = await Promise.all([1, 2, 3].map(() => call(t, 'post', `${base()}/worker-runs`, owner, { worker_id: workerId })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
  });

  it('answers the pre-allocation refusals', async () => {
    const draftOnly = (await call(t, 'post', `${base()}/workers`, owner, { slug: 'unpub', display_name: 'u', agent_passport_id: 'agent' }).expect(201)).body.resource_id;
    expect((await call(t, 'post', `${base()}/worker-runs`, owner, { worker_id: draftOnly }).expect(409)).body.detail.code).toBe('worker_not_published');
    const mobile = await publishedWorker(t, owner, 'mobile', { environment_classes: ['mobile'] });
    expect((await call(t, 'post', `${base()}/worker-runs`, owner, { worker_id: mobile }).expect(409)).body.detail.code).toBe('environment_unavailable');
    await setWorkerPlan(t, owner.workspaceId, 'free');
    try {
      const browser = await publishedWorker(t, owner, 'browser', { environment_classes: ['browser'] });
      const res = await call(t, 'post', `${base()}/worker-runs`, owner, { worker_id: browser }).expect(402);
      expect(res.body.detail).toMatchObject({ code: 'environment_not_in_plan', fix_action: 'upgrade_plan', set_by: 'control' });
      const fill = Array.from({ length: 50 }, (_, i) => ({ id: `run_fill${i + 1}`, kind: 'run' as const, status: 'succeeded', environment_classes: ['code'], orchestrator_run_id: 'x' }));
      await seedWorkerRuns(t, owner.workspaceId, owner.userId, fill);
      expect((await call(t, 'post', `${base()}/worker-runs`, owner, { worker_id: workerId }).expect(402)).body.detail.code).toBe('run_allowance_exhausted');
      await deleteWorkerRuns(t, owner.workspaceId, 'run_fill');
    } finally {
      await setWorkerPlan(t, owner.workspaceId, 'team');
    }
    await call(t, 'post', `${base()}/worker-runs`, owner, { worker_id: 'wkr_000000000000000000000000' }).expect(404);
    const profile = await call(t, 'post', `${base()}/worker-runs`, owner, { worker_id: workerId, session_profile_id: 'wsp_missing' }).expect(422);
    expect(profile.body.detail).toEqual([{ loc: ['body', 'session_profile_id'], msg: 'unknown or revoked session profile', type: 'value_error' }]);
  });

  it('starts demo runs within the trial allowance', async () => {
    const res = await call(t, 'post', `${base()}/worker-demo-runs`, owner, { template_id: 'tpl_web_research' }).expect(201);
    expect(res.body.run).toMatchObject({ kind: 'demo', template_id: 'tpl_web_research', status: 'queued', environment_classes: ['research'] });
    expect((await call(t, 'post', `${base()}/worker-demo-runs`, owner, { template_id: 'tpl_mobile_qa' }).expect(409)).body.detail.code).toBe('demo_not_supported');
    await call(t, 'post', `${base()}/worker-demo-runs`, owner, { template_id: 'nope' }).expect(422);
  });

  it('refuses a demo run once the trial allowance is used up, recording nothing', async () => {
    await setWorkerPlan(t, owner.workspaceId, 'free');
    const trial = [1, 2, 3].map((g) => ({
      id: `run_trial${g}`, kind: 'demo' as const, template_id: 'tpl_web_research', status: 'succeeded', environment_classes: ['research'], orchestrator_run_id: 'x',
    }));
    await seedWorkerRuns(t, owner.workspaceId, owner.userId, trial);
    const runs = async () => (await t.db.query(`SELECT count(*)::int AS n FROM worker_runs WHERE workspace_id = $1`, [owner.workspaceId]))[0].n;
    try {
      const before = await runs();
      const res = await call(t, 'post', `${base()}/worker-demo-runs`, owner, { template_id: 'tpl_web_research' }).expect(402);
      expect(res.body).toEqual({
        detail: {
          code: 'trial_exhausted',
          reason: 'entitlement',
          what: 'the demo run was not started',
          why: 'the demo runs of the trial allowance are used up',
          suggested_fix: 'create a worker from the template and run it',
          rule_reference: 'docs/workers.md#runs',
          set_by: 'control',
        },
      });
      expect(await runs()).toBe(before);
    } finally {
      await deleteWorkerRuns(t, owner.workspaceId, 'run_trial');
      await setWorkerPlan(t, owner.workspaceId, 'team');
    }
  });

  it('answers the typed 503 when the orchestrator refuses, keeping the run failed', async () => {
    orchestrator.refuse = true;
    const res = await call(t, 'post', `${base()}/worker-runs`, owner, { worker_id: workerId }).expect(503);
    expect(res.body.detail).toMatchObject({ code: 'orchestrator_refused', set_by: 'control' });
    const run = (await call(t, 'get', `${base()}/worker-runs/${res.body.detail.run_id}`, owner).expect(200)).body.run;
    expect(run.status).toBe('failed');
  });

  describe('run controls', () => {
    const start = async () => (await call(t, 'post', `${base()}/worker-runs`, owner, { worker_id: workerId }).expect(201)).body.run.run_id as string;
    const setStatus = (id: string, status: string) => setWorkerRunStatus(t, id, status);

    it('pause, resume and cancel follow the state rules and reach the orchestrator', async () => {
      const id = await start();
      expect((await call(t, 'post', `${base()}/worker-runs/${id}/pause`, owner).expect(409)).body).toEqual({ detail: 'run is not running' });
      await setStatus(id, 'running'); // the orchestrator reports it running
      expect((await call(t, 'post', `${base()}/worker-runs/${id}/resume`, owner).expect(409)).body).toEqual({ detail: 'run is not paused' });
      expect((await call(t, 'post', `${base()}/worker-runs/${id}/pause`, members.developer).expect(200)).body.run.status).toBe('paused');
      expect((await call(t, 'post', `${base()}/worker-runs/${id}/resume`, owner).expect(200)).body.run.status).toBe('running');
      const cancelled = (await call(t, 'post', `${base()}/worker-runs/${id}/cancel`, owner).expect(200)).body.run;
      expect(cancelled).toMatchObject({ status: 'cancelled', ended_at: expect.any(String) });
      expect((await call(t, 'post', `${base()}/worker-runs/${id}/cancel`, owner).expect(409)).body).toEqual({ detail: 'run is not active' });
      const paths = orchestrator.calls.map((c) => c.path).filter((p) => p.startsWith('/v1/runs/orc_'));
      expect(paths.slice(-3).map((p) => p.split('/').pop())).toEqual(['pause', 'resume', 'cancel']);
    });

    it('leaves the run unchanged when the orchestrator cannot be told', async () => {
      const id = await start();
      orchestrator.refuse = true;
      const res = await call(t, 'post', `${base()}/worker-runs/${id}/cancel`, owner).expect(503);
      expect(res.body.detail).toMatchObject({ code: 'orchestrator_refused', what: 'the cancel was not applied; the run is unchanged' });
      expect((await call(t, 'get', `${base()}/worker-runs/${id}`, owner).expect(200)).body.run.status).toBe('queued');
    });

    it('answers the typed 503 for every control the orchestrator refuses, leaving state and lease as they were', async () => {
      const id = await start();
      const refused = (verb: string) => ({
        detail: {
          code: 'orchestrator_refused',
          reason: 'orchestration_unavailable',
          what: `the ${verb} was not applied; the run is unchanged`,
          why: 'the orchestration service refused the request',
          suggested_fix: 'check the orchestration service (see the workers doctor), then try again',
          rule_reference: 'docs/workers.md#runs',
          set_by: 'control',
        },
      });
      const run = async () => (await call(t, 'get', `${base()}/worker-runs/${id}`, owner).expect(200)).body.run;
      orchestrator.refuse = true;
      await setStatus(id, 'running');
      expect((await call(t, 'post', `${base()}/worker-runs/${id}/pause`, owner).expect(503)).body).toEqual(refused('pause'));
      expect((await call(t, 'post', `${base()}/worker-runs/${id}/control-lease`, owner, {}).expect(503)).body).toEqual(refused('control-lease'));
      expect(await run()).toMatchObject({ status: 'running', control_lease: null });
      await setStatus(id, 'paused');
      expect((await call(t, 'post', `${base()}/worker-runs/${id}/resume`, owner).expect(503)).body).toEqual(refused('resume'));
      expect((await run()).status).toBe('paused');
    });

    it('grants the control lease to one admin at a time', async () => {
      const id = await start();
      expect((await call(t, 'post', `${base()}/worker-runs/${id}/control-lease`, members.admin, {}).expect(409)).body).toEqual({ detail: 'run is not running or paused' });
      await setStatus(id, 'running');
      const res = await call(t, 'post', `${base()}/worker-runs/${id}/control-lease`, members.admin, { duration_seconds: 120 }).expect(200);
      expect(res.body.run.control_lease).toEqual({ lease_id: expect.stringMatching(/^lse_/), holder_user_id: members.admin.userId, expires_at: expect.any(String) });
      expect((await call(t, 'post', `${base()}/worker-runs/${id}/control-lease`, owner, {}).expect(409)).body).toEqual({ detail: 'control lease is held by another operator' });
      await call(t, 'post', `${base()}/worker-runs/${id}/control-lease`, members.admin, {}).expect(200);
      const bad = await call(t, 'post', `${base()}/worker-runs/${id}/control-lease`, members.admin, { duration_seconds: 5 }).expect(422);
      expect(bad.body.detail[0]).toMatchObject({ loc: ['body', 'duration_seconds'], type: 'greater_than_equal' });
    });

    it('serves artifacts of the run while retained', async () => {
      const id = await start();
      await seedRunArtifacts(t, owner.workspaceId, id, [
        { id: 'art_1', name: 'report.md', media_type: 'text/markdown', size_bytes: 1234, digest: 'sha256:ab', expires_in_seconds: 7 * 86400 },
        { id: 'art_old', name: 'old.md', media_type: 'text/markdown', size_bytes: 1, digest: 'sha256:cd', expires_in_seconds: -1 },
      ]);
      const res = await call(t, 'get', `${base()}/worker-runs/${id}/artifacts/art_1`, members.viewer).expect(200);
      expect(res.body.artifact).toMatchObject({ artifact_id: 'art_1', run_id: id, name: 'report.md', size_bytes: 1234, media_type: 'text/markdown' });
      expect((await call(t, 'get', `${base()}/worker-runs/${id}/artifacts/art_old`, owner).expect(404)).body).toEqual({ detail: 'artifact not found' });
      expect((await call(t, 'get', `${base()}/worker-runs/run_nope/artifacts/art_1`, owner).expect(404)).body).toEqual({ detail: 'run not found' });
    });

    it('authorization matrices', async () => {
      const id = await start();
      await setStatus(id, 'running');
      const ws = (w: string) => `/api/v1/workspaces/${w}`;
      await expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `${ws(w)}/worker-runs`, minRole: 'viewer', read: true });
      await expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `${ws(w)}/worker-runs/${id}`, minRole: 'viewer', read: true });
      await expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => `${ws(w)}/run-estimates`, body: { worker_id: workerId }, minRole: 'viewer', read: true });
      await expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => `${ws(w)}/worker-runs/${id}/control-lease`, body: {}, minRole: 'admin', read: false });
      await expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => `${ws(w)}/worker-runs/${id}/pause`, minRole: 'developer', read: false });
      await expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => `${ws(w)}/worker-runs/${id}/resume`, minRole: 'developer', read: false });
      await expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => `${ws(w)}/worker-runs/${id}/cancel`, minRole: 'developer', read: false });
      await expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => `${ws(w)}/worker-runs`, body: { worker_id: workerId }, minRole: 'developer', read: false });
      await expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => `${ws(w)}/worker-demo-runs`, body: { template_id: 'tpl_web_research' }, minRole: 'developer', read: false });
      expect((await call(t, 'get', `${base()}/worker-runs/${id}`, owner).expect(200)).body.run.status).toBe('running');
    });
  });

  describe('session profiles', () => {
    it('creates, lists, reads and revokes (idempotently)', async () => {
      const created = await call(t, 'post', `${base()}/worker-session-profiles`, members.developer, { name: 'browser-login', environment_class: 'browser', description: 'signed-in CRM' }).expect(201);
      expect(created.body).toEqual({
        schema_version: 1, session_profile_id: expect.stringMatching(/^wsp_/), workspace_id: owner.workspaceId, name: 'browser-login', environment_class: 'browser',
        description: 'signed-in CRM', status: 'active', created_by: { kind: 'operator', id: members.developer.userId }, created_at: expect.any(String), revoked_at: null,
      });
      const id = created.body.session_profile_id;
      expect((await call(t, 'post', `${base()}/worker-session-profiles`, owner, { name: 'browser-login', environment_class: 'browser' }).expect(409)).body).toEqual({
        detail: 'session profile name already exists',
      });
      const list = await call(t, 'get', `${base()}/worker-session-profiles`, members.viewer).expect(200);
      expect(list.body.session_profiles.map((p: { session_profile_id: string }) => p.session_profile_id)).toContain(id);
      expect((await call(t, 'get', `${base()}/worker-session-profiles/${id}`, members.viewer).expect(200)).body.session_profile.status).toBe('active');
      const revoked = (await call(t, 'post', `${base()}/worker-session-profiles/${id}/revoke`, owner).expect(200)).body;
      expect(revoked).toMatchObject({ status: 'revoked', revoked_at: expect.any(String) });
      const again = (await call(t, 'post', `${base()}/worker-session-profiles/${id}/revoke`, owner).expect(200)).body;
      expect(again.revoked_at).toBe(revoked.revoked_at);
      await call(t, 'post', `${base()}/worker-session-profiles`, owner, { name: 'browser-login', environment_class: 'browser' }).expect(201);
      expect((await call(t, 'get', `${base()}/worker-session-profiles/wsp_nope`, owner).expect(404)).body).toEqual({ detail: 'session profile not found' });
    });

    it('pages the list in creation order, the cursor continuing after the last row', async () => {
      const ws = await t.signIn();
      const path = `/api/v1/workspaces/${ws.workspaceId}/worker-session-profiles`;
      const ids: string[] = [];
      for (const name of ['p1', 'p2', 'p3']) ids.push((await call(t, 'post', path, ws, { name, environment_class: 'code' }).expect(201)).body.session_profile_id);
      const first = (await call(t, 'get', `${path}?limit=2`, ws).expect(200)).body;
      expect(first.session_profiles.map((p: { session_profile_id: string }) => p.session_profile_id)).toEqual(ids.slice(0, 2));
      expect(first.next_cursor).toEqual(expect.any(String));
      const second = (await call(t, 'get', `${path}?limit=2&cursor=${first.next_cursor}`, ws).expect(200)).body;
      expect(second.session_profiles.map((p: { session_profile_id: string }) => p.session_profile_id)).toEqual(ids.slice(2));
      expect(second.next_cursor).toBeNull();
    });

    it('answers 422 for a cursor the list did not issue', async () => {
      for (const list of ['worker-session-profiles', 'worker-runs']) {
        const res = await call(t, 'get', `${base()}/${list}?cursor=nope`, members.viewer).expect(422);
        expect(res.body.detail).toEqual([{ loc: ['query', 'cursor'], msg: 'invalid cursor', type: 'value_error' }]);
      }
    });

    it('validates and screens', async () => {
      const bad = await call(t, 'post', `${base()}/worker-session-profiles`, owner, { name: '', environment_class: 'moon' }).expect(422);
      expect(bad.body.detail.map((e: { loc: string[] }) => e.loc)).toEqual([['body', 'name'], ['body', 'environment_class']]);
      const secret = await call(t, 'post', `${base()}/worker-session-profiles`, owner, { name: 'x', environment_class: 'browser', description: 'password: Hunter22!' }).expect(422);
      expect(secret.body.detail[0]).toMatchObject({ loc: ['body', 'description'], type: 'credential_detected' });
    });

    it('authorization matrices', async () => {
      const id = (await call(t, 'post', `${base()}/worker-session-profiles`, owner, { name: 'm', environment_class: 'code' }).expect(201)).body.session_profile_id;
      await expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `/api/v1/workspaces/${w}/worker-session-profiles`, minRole: 'viewer', read: true });
      await expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `/api/v1/workspaces/${w}/worker-session-profiles/${id}`, minRole: 'viewer', read: true });
      await expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => `/api/v1/workspaces/${w}/worker-session-profiles`, body: { name: 'n', environment_class: 'code' }, minRole: 'developer', read: false });
      await expectAccessMatrix(t, owner, members, { method: 'post', path: (w) => `/api/v1/workspaces/${w}/worker-session-profiles/${id}/revoke`, minRole: 'developer', read: false });
    });
  });

  it('the doctor sees the orchestrator', async () => {
    const res = await call(t, 'get', `${base()}/workers-doctor`, owner).expect(200);
    expect(res.body.dependencies.find((d: { name: string }) => d.name === 'orchestrator').state).toBe('ok');
  });
});
