import { Role } from 'src/platform/access/actions';
import { Operator, startTestApp, TestApp } from 'test/support/app';
import { call, expectAccessMatrix, roleMembers } from 'test/support/access-matrix';
import { mintPassport } from 'test/support/workers';
import { clearWorkerPlan, deleteWorkerRuns, seedWorkerRuns, setWorkerPlan, setWorkspaceFlag } from 'test/support/factories';

describe('Workers reference documents', () => {
  let t: TestApp;
  let owner: Operator;
  let members: Record<Role, Operator>;
  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.signIn();
    members = await roleMembers(t, owner);
  });
  afterAll(() => t.close());

  const ws = () => owner.workspaceId;

  describe('GET /worker-templates', () => {
    it('returns every template with availability; gated ones carry their gate', async () => {
      const res = await call(t, 'get', '/api/v1/worker-templates', members.viewer).expect(200);
      expect(res.body.schema_version).toBe(1);
      const byId = Object.fromEntries(res.body.templates.map((e: { template: { template_id: string } }) => [e.template.template_id, e]));
      expect(byId.tpl_code_review.template).toMatchObject({ schema_version: 1, name: 'Pull request reviewer', environment_class: 'development', demo_supported: true });
      expect(byId.tpl_code_review.availability).toEqual({ status: 'available', reason: null, gated_by_environment_classes: [] });
      expect(byId.tpl_mobile_qa.availability).toEqual({
        status: 'gated',
        reason: 'this deployment has no runtime for the environment class this template needs',
        gated_by_environment_classes: ['mobile'],
      });
      expect(byId.tpl_desktop_reports.availability.status).toBe('gated');
    });

    it('filters by category', async () => {
      const res = await call(t, 'get', '/api/v1/worker-templates?category=browser', owner).expect(200);
      expect(res.body.templates.map((e: { template: { environment_class: string } }) => e.template.environment_class)).toEqual(['browser']);
      const empty = await call(t, 'get', '/api/v1/worker-templates?category=mobile', owner).expect(200);
      expect(empty.body.templates).toHaveLength(1);
    });

    it('answers 422 for a category outside the five classes', async () => {
      const res = await call(t, 'get', '/api/v1/worker-templates?category=code', owner).expect(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['query', 'category'], type: 'enum' });
    });

    it('needs a session', async () => {
      const res = await call(t, 'get', '/api/v1/worker-templates').expect(401);
      expect(res.body).toEqual({ detail: 'session required' });
    });
  });

  describe('GET /worker-environments', () => {
    it('reports each class against the deployment and the plan', async () => {
      const res = await call(t, 'get', `/api/v1/workspaces/${ws()}/worker-environments`, members.viewer).expect(200);
      expect(res.body.plan).toBe('free');
      const byClass = Object.fromEntries(res.body.environments.map((e: { environment_class: string }) => [e.environment_class, e]));
      expect(byClass.code).toEqual({ environment_class: 'code', status: 'available', reason: null, runnable: true, permitted_by_plan: true, active_runs: 0 });
      expect(byClass.browser).toMatchObject({ status: 'not_in_plan', runnable: true, permitted_by_plan: false });
      expect(byClass.mobile).toMatchObject({ status: 'not_runnable', runnable: false });
      expect(res.body.capabilities).toEqual({
        can_read: true, can_author: false, can_run: false, can_publish: false, can_take_control: false, can_manage_billing: false,
      });
    });

    it('follows the plan row', async () => {
      await setWorkerPlan(t, ws(), 'builder');
      try {
        const res = await call(t, 'get', `/api/v1/workspaces/${ws()}/worker-environments`, owner).expect(200);
        expect(res.body.environments.find((e: { environment_class: string }) => e.environment_class === 'browser').status).toBe('available');
      } finally {
        await clearWorkerPlan(t, ws());
      }
    });

    it('authorization matrix', () => expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `/api/v1/workspaces/${w}/worker-environments`, minRole: 'viewer', read: true }));
  });

  describe('GET /workers-entitlements', () => {
    it('returns the plan, limits, usage from real rows and the whole ladder without money', async () => {
      const res = await call(t, 'get', `/api/v1/workspaces/${ws()}/workers-entitlements`, members.viewer).expect(200);
      expect(res.body).toMatchObject({
        schema_version: 1,
        workspace_id: ws(),
        plan: 'free',
        included_runs: { kind: 'limited', value: 50 },
        concurrency: { kind: 'limited', value: 1 },
        schedules_allowed: false,
        webhooks_allowed: false,
        card_on_file: false,
        usage: { runs_started: 0, demo_runs_started: 0, active_runs: 0, active_environments: 0 },
      });
      expect(res.body.usage.period_start).toMatch(/^\d{4}-\d{2}-01T00:00:00\.000Z$/);
      expect(res.body.plan_ladder.map((p: { plan: string }) => p.plan)).toEqual(['free', 'builder', 'pro', 'team', 'enterprise']);
      for (const entry of res.body.plan_ladder) {
        expect(entry.amounts_are_configuration).toBe(true);
        expect(JSON.stringify(entry)).not.toMatch(/price|usd|amount_|cost/i);
      }
      const enterprise = res.body.plan_ladder.find((p: { plan: string }) => p.plan === 'enterprise');
      expect(enterprise.included_runs).toEqual({ kind: 'unlimited' });
      expect(res.body.class_availability.find((c: { environment_class: string }) => c.environment_class === 'mobile').status).toBe('not_runnable');
    });

    it('counts runs from the run rows', async () => {
      const user = owner.userId;
      await seedWorkerRuns(t, ws(), user, [
        { id: 'run_e1', kind: 'run', status: 'running', environment_classes: ['code', 'browser'], orchestrator_run_id: 'o1' },
        { id: 'run_e2', kind: 'demo', status: 'succeeded', environment_classes: ['code'], orchestrator_run_id: 'o2' },
        { id: 'run_e3', kind: 'run', status: 'failed', environment_classes: ['code'], orchestrator_run_id: null },
      ]);
      try {
        const res = await call(t, 'get', `/api/v1/workspaces/${ws()}/workers-entitlements`, owner).expect(200);
        expect(res.body.usage).toMatchObject({ runs_started: 1, demo_runs_started: 1, active_runs: 1, active_environments: 2 });
        expect(res.body.runs_remaining).toEqual({ kind: 'limited', value: 49 });
        const envs = await call(t, 'get', `/api/v1/workspaces/${ws()}/worker-environments`, owner).expect(200);
        expect(envs.body.environments.find((e: { environment_class: string }) => e.environment_class === 'browser').active_runs).toBe(1);
      } finally {
        await deleteWorkerRuns(t, ws());
      }
    });

    it('authorization matrix', () => expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `/api/v1/workspaces/${w}/workers-entitlements`, minRole: 'viewer', read: true }));
  });

  describe('GET /permission-presets', () => {
    it('compiles only computer-use actions while the workspace holds no connector pack', async () => {
      const res = await call(t, 'get', `/api/v1/workspaces/${ws()}/permission-presets`, members.viewer).expect(200);
      const safe = res.body.presets.find((p: { preset: string }) => p.preset === 'safe_writes');
      expect(safe.compiled_capabilities.allowed.every((c: { capability_class: string }) => c.capability_class === 'computer_use_action')).toBe(true);
    });

    it('compiles the three presets from the reviewed tool descriptions of the connected packs', async () => {
      const connected = await call(t, 'post', `/api/v1/workspaces/${ws()}/connections`, owner, { slug: 'adyen', source: 'native' });
      expect(connected.status).toBe(200);
      const res = await call(t, 'get', `/api/v1/workspaces/${ws()}/permission-presets`, members.viewer).expect(200);
      const byName = Object.fromEntries(res.body.presets.map((p: { preset: string }) => [p.preset, p]));
      expect(Object.keys(byName)).toEqual(['read_only', 'safe_writes', 'custom']);
      for (const preset of res.body.presets) {
        expect(preset).toMatchObject({ schema_version: 1, workspace_id: ws(), unlisted_capability_default: 'denied' });
        expect(preset.default_for_new_workers).toBe(preset.preset === 'safe_writes');
      }
      // the allows/forbids sentences are the catalog's reviewed tool descriptions
      const readOnly = byName.read_only;
      expect(readOnly.allows).toContainEqual({ statement: 'List payments of a merchant account.', capability_hint: 'cap.payment.list' });
      expect(readOnly.forbids).toContainEqual({ statement: 'Request a refund of a payment.', capability_hint: 'cap.payment.refund' });
      expect(readOnly.compiled_capabilities.allowed.every((c: { semantic_guarantee: string }) => c.semantic_guarantee === 'read_only')).toBe(true);
      const safe = byName.safe_writes;
      const allowed = safe.compiled_capabilities.allowed.map((c: { action: string }) => c.action);
      expect(allowed).toEqual(expect.arrayContaining(['adyen.list_payments', 'browser.fill_form']));
      expect(allowed).not.toContain('browser.submit_form');
      expect(allowed).not.toContain('adyen.refund_payment');
      expect(safe.compiled_capabilities.forbidden.every((c: { high_impact: boolean; semantic_guarantee: string }) => c.high_impact || c.semantic_guarantee === 'irreversible')).toBe(true);
      expect(safe.compiled_capabilities.allowed[0]).toEqual({
        capability_class: 'verified_capability',
        environment_class: null,
        action: 'adyen.list_payments',
        description: 'List payments of a merchant account.',
        semantic_guarantee: 'read_only',
        high_impact: false,
        allowed_domains: expect.any(Array),
      });
      expect(safe.cedar_policy_ids).toContain('workers.safe_writes.permit.adyen.list_payments');
      expect(byName.custom).toMatchObject({ allows: [], forbids: [], compiled_capabilities: { allowed: [], forbidden: [] } });
    });

    it('authorization matrix', () => expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `/api/v1/workspaces/${w}/permission-presets`, minRole: 'viewer', read: true }));
  });

  describe('GET /execution-modes', () => {
    it('returns the three modes with exactly one default and the approval table', async () => {
      const res = await call(t, 'get', `/api/v1/workspaces/${ws()}/execution-modes`, members.viewer).expect(200);
      expect(res.body.modes.map((m: { mode: string }) => m.mode)).toEqual(['safe', 'balanced', 'autonomous']);
      expect(res.body.modes.filter((m: { is_default: boolean }) => m.is_default).map((m: { mode: string }) => m.mode)).toEqual(['balanced']);
      for (const mode of res.body.modes) {
        expect(mode).toMatchObject({ schema_version: 1, high_impact_ui_action_policy: 'requires_human_control', limits_enforced: 'always', approval_timeout_seconds: 900 });
        expect(mode.approval_requirements.map((a: { action_class: string }) => a.action_class)).toEqual([
          'read', 'verified_reversible_write', 'verified_irreversible_write', 'production_write', 'computer_use_action', 'spend_above_threshold', 'child_run_spawn',
        ]);
      }
      const safe = res.body.modes[0].approval_requirements;
      expect(safe[0]).toEqual({ action_class: 'read', approval: 'not_required', note: 'runs without a human decision' });
      expect(safe[6].approval).toBe('forbidden_unattended');
      expect(res.body.modes[1].approval_requirements[3].approval).toBe('required_in_production');
    });

    it('authorization matrix', () => expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `/api/v1/workspaces/${w}/execution-modes`, minRole: 'viewer', read: true }));
  });

  describe('capabilities block', () => {
    it('follows the caller role', async () => {
      const expected: Record<Role, object> = {
        viewer: { can_read: true, can_author: false, can_run: false, can_publish: false, can_take_control: false, can_manage_billing: false },
        developer: { can_read: true, can_author: true, can_run: true, can_publish: false, can_take_control: false, can_manage_billing: false },
        admin: { can_read: true, can_author: true, can_run: true, can_publish: true, can_take_control: true, can_manage_billing: false },
        owner: { can_read: true, can_author: true, can_run: true, can_publish: true, can_take_control: true, can_manage_billing: true },
      };
      for (const role of Object.keys(expected) as Role[]) {
        const res = await call(t, 'get', `/api/v1/workspaces/${ws()}/execution-modes`, members[role]).expect(200);
        expect(res.body.capabilities).toEqual(expected[role]);
      }
    });

    it('keeps only reads in a frozen workspace', async () => {
      await setWorkspaceFlag(t, ws(), 'frozen', true);
      try {
        const res = await call(t, 'get', `/api/v1/workspaces/${ws()}/execution-modes`, owner).expect(200);
        expect(res.body.capabilities).toEqual({ can_read: true, can_author: false, can_run: false, can_publish: false, can_take_control: false, can_manage_billing: false });
      } finally {
        await setWorkspaceFlag(t, ws(), 'frozen', false);
      }
    });
  });

  describe('GET /workers-doctor', () => {
    it('reports each dependency state', async () => {
      const res = await call(t, 'get', `/api/v1/workspaces/${ws()}/workers-doctor`, members.viewer).expect(200);
      const states = Object.fromEntries(res.body.dependencies.map((d: { name: string; state: string }) => [d.name, d.state]));
      expect(states).toEqual({ database: 'ok', hot_path: 'ok', orchestrator: 'not_configured', assistant: 'disabled', agent_passports: 'missing' });
      expect(res.body.ok).toBe(false);

      await setWorkspaceFlag(t, ws(), 'assistant_enabled', true);
      await mintPassport(t, owner, 'doctor-agent');
      const again = await call(t, 'get', `/api/v1/workspaces/${ws()}/workers-doctor`, owner).expect(200);
      const after = Object.fromEntries(again.body.dependencies.map((d: { name: string; state: string }) => [d.name, d.state]));
      expect(after).toMatchObject({ assistant: 'ok', agent_passports: 'ok' });
      await setWorkspaceFlag(t, ws(), 'assistant_enabled', false);
    });

    it('authorization matrix', () => expectAccessMatrix(t, owner, members, { method: 'get', path: (w) => `/api/v1/workspaces/${w}/workers-doctor`, minRole: 'viewer', read: true }));
  });
});

describe('Workers doctor with an unreachable orchestrator', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ ORCHESTRATOR_URL: 'http://127.0.0.1:9' });
  });
  afterAll(() => t.close());

  it('reports the orchestrator unreachable', async () => {
    const op = await t.signIn();
    const res = await call(t, 'get', `/api/v1/workspaces/${op.workspaceId}/workers-doctor`, op).expect(200);
    expect(res.body.dependencies.find((d: { name: string }) => d.name === 'orchestrator')).toEqual({
      name: 'orchestrator',
      state: 'unreachable',
      detail: 'the orchestration service does not answer; runs are refused',
    });
  });
});
