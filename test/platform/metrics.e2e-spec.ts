import { MetricsService } from 'src/platform/metrics/metrics.service';
import { bearer, startTestApp, TestApp } from 'test/support/app';
import { stageSnapshotVersion } from 'test/support/factories';

describe('Prometheus metrics', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ METRICS_ADDR: '127.0.0.1:0' });
  });
  afterAll(() => t.close());

  const scrape = async () => {
    const res = await fetch(`http://127.0.0.1:${t.app.get(MetricsService).port}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    return res.text();
  };

  it('serves request durations per route template and status on its own listener', async () => {
    await t.http().get('/healthz').expect(200);
    await t.http().get('/api/v1/workspaces/ws_missing').expect(401);
    const text = await scrape();
    expect(text).toContain('# TYPE control_http_request_duration_seconds histogram');
    expect(text).toMatch(/control_http_request_duration_seconds_count\{method="GET",route="\/healthz",status="200"\} 1/);
    expect(text).toMatch(/control_http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/workspaces\/:ws",status="401"\} 1/);
    expect(text).not.toContain('ws_missing');
  });

  it('reports publications pending, stream backlog and policy compiles', async () => {
    const op = await t.signIn();
    await t.http().post(`/api/v1/workspaces/${op.workspaceId}/policy/test`).set(bearer(op)).expect(200);
    await stageSnapshotVersion(t, op.workspaceId);
    const text = await scrape();
    expect(text).toMatch(/^control_publications_pending 1$/m);
    expect(text).toMatch(/^control_policy_compile_duration_seconds_count 1$/m);
    expect(text).toMatch(/^control_policy_compiler_busy_total 0$/m);
    expect(text).toMatch(/^control_stream_pending\{stream="receipts"\} \d+$/m);
    expect(text).toMatch(/^control_stream_lag\{stream="usage"\} \d+$/m);
    expect(text).toContain('# TYPE control_stream_parked_total counter');
    expect(text).toContain('# TYPE control_connection_refresh_total counter');
  });

  it('is not served on the API port', async () => {
    await t.http().get('/metrics').expect(404);
  });

  it('answers 404 for other paths on the metrics listener', async () => {
    const res = await fetch(`http://127.0.0.1:${t.app.get(MetricsService).port}/other`);
    expect(res.status).toBe(404);
  });
});

describe('metrics listener off by default', () => {
  it('binds nothing without METRICS_ADDR', async () => {
    const t = await startTestApp();
    try {
      expect(t.app.get(MetricsService).port).toBeUndefined();
    } finally {
      await t.close();
    }
  });
});
