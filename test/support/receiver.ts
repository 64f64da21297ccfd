import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** What the receiver answers to its n-th request (0-based): a status and body, or 'hang' (never answers). */
export type Behaviour = (n: number) => { status: number; body?: string } | 'hang';

/** A webhook receiver on 127.0.0.1 at a random port, recording every request; stopped by the suite. */
export class Receiver {
  readonly received: Received[] = [];
  private readonly server: Server;
  private readonly hanging = new Set<import('node:http').ServerResponse>();

  private constructor(private behaviour: Behaviour) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const n = this.received.length;
        this.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
        const answer = this.behaviour(n);
        if (answer === 'hang') {
          this.hanging.add(res);
          return;
        }
        res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body ?? 'ok');
      });
    });
  }

  static async start(behaviour: Behaviour = () => ({ status: 200 })): Promise<Receiver> {
    const receiver = new Receiver(behaviour);
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
