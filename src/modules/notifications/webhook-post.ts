import { Agent as HttpAgent, IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import type { AttemptError } from 'src/modules/notifications/entities/notification-attempt.entity';
import { addressesOf, hostOf, isRefusedAddress } from 'src/modules/notifications/targets';

export interface PostOutcome {
  responseStatus: number | null;
  error: AttemptError | null;
  excerpt: string;
}

const EXCERPT_CHARS = 1024;
/** Bytes of a receiver's answer read at most (the excerpt keeps 1,024 characters of them). */
const READ_BYTES = 8 * 1024;

class RefusedTarget extends Error {}
class Timeout extends Error {}

/**
 * A resolver that answers only addresses notifications may reach, and fails when any answer is
 * refused (a name that also resolves to an internal address is refused whole): the socket then
 * connects to exactly the address checked here, so a DNS answer changed between a check and the
 * connect cannot reach an internal service.
 */
function checkedLookup(allowPrivate: boolean): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    addressesOf(hostname).then(
      (list) => {
        if (list.length === 0) return callback(Object.assign(new Error('no address'), { code: 'ENOTFOUND' }));
        if (!allowPrivate && list.some((a) => isRefusedAddress(a.address))) return callback(new RefusedTarget());
        if (options.all) return callback(null, list);
        return callback(null, list[0].address, list[0].family);
      },
      (error: unknown) => callback(error),
    );
  }) as unknown as LookupFunction;
}

/** POSTs webhook bodies: keep-alive connections, checked addresses, no redirects, one bound per attempt. */
export class WebhookPoster {
  private readonly http: HttpAgent;
  private readonly https: HttpsAgent;

  constructor(
    private readonly timeoutMs: number,
    private readonly allowPrivate: boolean,
  ) {
    const lookup = checkedLookup(allowPrivate);
    this.http = new HttpAgent({ keepAlive: true, lookup });
    this.https = new HttpsAgent({ keepAlive: true, lookup });
  }

  /** The last URLs parsed (a URL is immutable here: only read). */
  private readonly urls = new Map<string, URL | null>();

  private parse(target: string): URL | null {
    let url = this.urls.get(target);
    if (url === undefined) {
      try {
        url = new URL(target);
      } catch {
        url = null;
      }
      if (this.urls.size >= 1024) this.urls.clear();
      this.urls.set(target, url);
    }
    return url;
  }

  close(): void {
    this.http.destroy();
    this.https.destroy();
  }

  /** POSTs one signed body (Standard Webhooks headers); a target URL is parsed once per endpoint URL. */
  post(target: string, id: string, timestamp: string, signature: string, body: string): Promise<PostOutcome> {
    const url = this.parse(target);
    if (url === null) return Promise.resolve({ responseStatus: null, error: 'refused_target', excerpt: '' });
    // A literal address never reaches the resolver: it is checked here.
    const host = hostOf(url);
    if (!this.allowPrivate && isIP(host) !== 0 && isRefusedAddress(host)) return Promise.resolve({ responseStatus: null, error: 'refused_target', excerpt: '' });
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'control-plane-notifications/1',
      'webhook-id': id,
      'webhook-timestamp': timestamp,
      'webhook-signature': signature,
      'content-length': String(Buffer.byteLength(body)),
    };
    const https = url.protocol === 'https:';
    return new Promise<PostOutcome>((resolve) => {
      let settled = false;
      const finish = (outcome: PostOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      const request = (https ? httpsRequest : httpRequest)(url, {
        method: 'POST',
        agent: https ? this.https : this.http,
        headers,
      });
      const timer = setTimeout(() => request.destroy(new Timeout()), this.timeoutMs);
      request.on('error', (error) => {
        const kind: AttemptError = error instanceof Timeout ? 'timeout' : error instanceof RefusedTarget ? 'refused_target' : 'connection';
        finish({ responseStatus: null, error: kind, excerpt: '' });
      });
      request.on('response', (response: IncomingMessage) => {
        const status = response.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          const excerpt = Buffer.concat(chunks).toString('utf8').slice(0, EXCERPT_CHARS);
          finish({ responseStatus: status, error: status >= 200 && status < 300 ? null : 'http_status', excerpt });
        };
        response.on('data', (chunk: Buffer) => {
          if (size < READ_BYTES) chunks.push(chunk);
          size += chunk.length;
          if (size >= READ_BYTES) {
            done();
            response.destroy();
          }
        });
        response.on('end', done);
        response.on('error', done);
      });
      request.end(body);
    });
  }
}
