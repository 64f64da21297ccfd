import { randomBytes } from 'node:crypto';

/** A prefixed identifier: `ws_` plus 24 lowercase hex characters (96 random bits). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}
