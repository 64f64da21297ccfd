import { createHmac, randomBytes } from 'node:crypto';

/** `whsec_` + base64 of 24 random bytes (CONTRACT.md section 7). */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** One Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 over `{id}.{timestamp}.{body}`. */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The `webhook-signature` header: one signature per current secret, space-separated. */
export function signatureHeader(secrets: string[], id: string, timestamp: number, body: string): string {
  return secrets.map((s) => sign(s, id, timestamp, body)).join(' ');
}
