import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';

export interface RecordedCall {
  method: string;
  path: string;
  authorization: string | undefined;
  body: Record<string, unknown> | null;
}

/**
 * A stand-in for the external worker orchestration service (like the gateway emulator): accepts
 * `POST /v1/runs` with a fresh run id and run controls, answers `GET /healthz`, records every call,
 * and can be switched to refuse (503) everything.
 */
export class OrchestratorEmulator {
  readonly calls: RecordedCall[] = [];
  refuse = false;
  private seq = 0;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OrchestratorEmulator> {
    const server = createServer();
    const emulator = new OrchestratorEmulator(server);
    server.on('request', (req, res) => {
      void emulator.handle(req).then(([status, body]) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return emulator;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage): Promise<[number, object]> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const path = req.url ?? '/';
    this.calls.push({ method: req.method ?? 'GET', path, authorization: req.headers.authorization, body: text ? JSON.parse(text) : null });
    if (path === '/healthz') return [200, { ok: true }];
    if (this.refuse) return [503, { error: 'unavailable' }];
    if (req.method === 'POST' && path === '/v1/runs') return [202, { run_id: `orc_${++this.seq}` }];
    return [200, {}];
  }
}
