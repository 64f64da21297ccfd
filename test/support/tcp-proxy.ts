import { createServer, Server, Socket, connect } from 'node:net';
import { AddressInfo } from 'node:net';

/**
 * A TCP forwarder in front of the real Redis or PostgreSQL, so a suite can take the server away
 * and bring it back on the same address: `stop()` closes the listener and cuts every connection
 * (clients see a reset, then ECONNREFUSED), `start()` listens again; `hold()` keeps every
 * connection open but holds the server's replies back (a server that stops answering),
 * `partition()` holds both directions (nothing reaches the server either, as in a network
 * partition), `release()` lets everything through. Nothing is mocked: commands reach the server.
 */
export class TcpProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private readonly upstreams = new Set<Socket>();
  private readonly clients = new Set<Socket>();
  private held = false;
  private partitioned = false;
  port = 0;

  private constructor(private readonly target: URL) {}

  /** A proxy of `targetUrl` (`redis://` or `postgres://`); `url` is the same URL through the proxy. */
  static async start(targetUrl: string): Promise<TcpProxy> {
    const proxy = new TcpProxy(new URL(targetUrl));
    await proxy.start();
    return proxy;
  }

  get url(): string {
    const url = new URL(this.target);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  /** Listens (again) on the same port; nothing to do while listening. */
  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer((client) => {
      const upstream = connect(Number(this.target.port || (this.target.protocol === 'redis:' ? 6379 : 5432)), this.target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      this.upstreams.add(upstream);
      this.clients.add(client);
      upstream.on('close', () => this.upstreams.delete(upstream));
      client.on('close', () => this.clients.delete(client));
      client.pipe(upstream).pipe(client);
      if (this.held || this.partitioned) upstream.pause();
      if (this.partitioned) client.pause();
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

  partition(): void {
    this.partitioned = true;
    for (const socket of [...this.upstreams, ...this.clients]) socket.pause();
  }

  release(): void {
    this.held = false;
    this.partitioned = false;
    for (const socket of [...this.upstreams, ...this.clients]) socket.resume();
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
