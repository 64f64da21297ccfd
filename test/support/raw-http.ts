import { request as send } from 'node:http';

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body, or the text when the answer is not JSON. */
  body: unknown;
}

/**
 * One request sent as written, to `127.0.0.1:port`: the path is not re-encoded (so `%ZZ` or `%00`
 * reach the server as they are) and the headers are those given (plus `Content-Length` for a body,
 * which node would otherwise send unframed on a GET).
 */
export function rawRequest(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<RawAnswer> {
  return new Promise<RawAnswer>((resolve, reject) => {
    const length = body === undefined || Object.keys(headers).some((h) => /^(content-length|transfer-encoding)$/i.test(h)) ? {} : { 'Content-Length': String(Buffer.byteLength(body)) };
    const req = send({ host: '127.0.0.1', port, method, path, headers: { ...headers, ...length }, agent: false }, (res) => {
      // An event stream does not end by itself: its status and headers are the answer.
      if (res.headers['content-type']?.startsWith('text/event-stream')) {
        res.destroy();
        return resolve({ status: res.statusCode!, headers: res.headers, body: '' });
      }
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text && res.headers['content-type']?.startsWith('application/json') ? JSON.parse(text) : text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
