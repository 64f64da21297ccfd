import { createServer, Server, Socket, connect } from 'node:net';
import { AddressInfo } from 'node:net';

/**
 * A TCP forwarder in front of the real Redis, so a suite can take "the Redis server" away and
 * bring it back on the same address: `stop()` closes the listener and cuts every connection
 * (clients see ECONNREFUSED), `start()` listens again; `hold()` keeps every connection open but
 * holds Redis's replies back (a Redis that stops answering), `release()` lets them through.
 * Nothing is mocked: commands reach Redis.
 */
export class TcpProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private readonly upstreams = new Set<Socket>();
  private held = false;
  port = 0;

  private constructor(private readonly target: { host: string; port: number }) {}

  static async start(targetUrl: string): Promise<TcpProxy> {
    const url = new URL(targetUrl);
    const proxy = new TcpProxy({ host: url.hostname, port: Number(url.port || 6379) });
    await proxy.start();
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      this.upstreams.add(upstream);
      upstream.on('close', () => this.upstreams.delete(upstream));
      client.pipe(upstream).pipe(client);
      if (this.held) upstream.pause();
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  hold(): void {
    this.held = true;
    for (const upstream of this.upstreams) upstream.pause();
  }

  release(): void {
    this.held = false;
    for (const upstream of this.upstreams) upstream.resume();
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
