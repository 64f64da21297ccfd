import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { createServer, Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { APP_CONFIG, AppConfig } from 'src/config/config';

/** A gauge whose value is read when Prometheus scrapes (e.g. a count from the database). */
export type GaugeReader = () => Promise<number | Record<string, number>>;

/**
 * The control plane's Prometheus metrics, prefixed `control_`, served in the text exposition
 * format on their own listener (METRICS_ADDR, off by default) so they never share the API's port.
 */
@Injectable()
export class MetricsService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly registry = new Registry();
  private server?: Server;
  private readonly logger = new Logger('metrics');

  readonly httpDuration = new Histogram({
    name: 'control_http_request_duration_seconds',
    help: 'Operator, internal and health request duration by route template and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly compileDuration = new Histogram({
    name: 'control_policy_compile_duration_seconds',
    help: 'Cedar compile latency (test, publish and snapshot recompiles)',
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [this.registry],
  });

  readonly compileBusy = new Counter({
    name: 'control_policy_compiler_busy_total',
    help: 'Compiles refused because the process was over its concurrency budget',
    registers: [this.registry],
  });

  readonly streamParked = new Counter({
    name: 'control_stream_parked_total',
    help: 'Malformed stream entries parked and acknowledged',
    labelNames: ['stream'],
    registers: [this.registry],
  });

  readonly refreshOutcomes = new Counter({
    name: 'control_connection_refresh_total',
    help: 'Credential refresh job outcomes',
    labelNames: ['outcome'],
    registers: [this.registry],
  });

  readonly databaseUnavailable = new Counter({
    name: 'control_database_unavailable_total',
    help: 'Requests answered 503 because PostgreSQL was unavailable, by cause (unreachable, connection_lost, shutdown, timeout)',
    labelNames: ['cause'],
    registers: [this.registry],
  });

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** Registers a gauge read at scrape time; a reader returning a record sets one series per label value. */
  gauge(name: string, help: string, read: GaugeReader, labelName?: string): void {
    new Gauge({
      name,
      help,
      labelNames: labelName ? [labelName] : [],
      registers: [this.registry],
      async collect() {
        const value = await read();
        if (typeof value === 'number') this.set(value);
        else for (const [label, v] of Object.entries(value)) this.set({ [labelName!]: label }, v);
      },
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    const address = this.config.metricsAddr;
    if (!address) return;
    this.server = createServer((req, res) => {
      if (req.method !== 'GET' || req.url !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': this.registry.contentType }).end(text),
        () => res.writeHead(503).end(),
      );
    });
    await new Promise<void>((resolve) => this.server!.listen(address.port, address.host, resolve));
    this.logger.log({ msg: 'metrics listening', host: address.host, port: address.port });
  }

  /** The bound port of the metrics listener (tests bind port 0). */
  get port(): number | undefined {
    const bound = this.server?.address();
    return bound && typeof bound === 'object' ? bound.port : undefined;
  }

  async onApplicationShutdown(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
