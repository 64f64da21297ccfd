import { closedObject, Schema } from 'src/common/http/document-schema';

/** The development issuer's key set: one public RS256 key. */
export const JWKS_SCHEMA: Schema = closedObject({
  keys: {
    type: 'array',
    items: closedObject({
      kty: { const: 'RSA' },
      n: { type: 'string' },
      e: { type: 'string' },
      kid: { type: 'string' },
      alg: { const: 'RS256' },
      use: { const: 'sig' },
    }),
  },
});
