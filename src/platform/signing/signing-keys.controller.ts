import { Controller, Get, Header } from '@nestjs/common';
import { Public } from 'src/platform/access/decorators';
import { closedObject } from 'src/common/http/document-schema';
import { Returns } from 'src/common/http/documented';
import { ControlSigning } from 'src/platform/signing/control-signing.service';

/** Seconds a client may keep the key set: a rotation publishes the new key beside the previous one first. */
export const SIGNING_KEYS_MAX_AGE_S = 300;

const JWKS_SCHEMA = closedObject({
  keys: {
    type: 'array',
    items: closedObject({ kty: { const: 'OKP' }, crv: { const: 'Ed25519' }, x: { type: 'string' }, kid: { type: 'string' }, alg: { const: 'EdDSA' }, use: { const: 'sig' } }),
  },
});

@Controller('.well-known')
export class SigningKeysController {
  constructor(private readonly signing: ControlSigning) {}

  /**
   * Control's live public signing keys (current, then previous and next during a rotation): what
   * verifies new signatures (snapshots a gateway applies, fresh audit checkpoints).
   */
  @Get('control-signing-keys.json')
  @Header('Cache-Control', `public, max-age=${SIGNING_KEYS_MAX_AGE_S}`)
  @Returns(JWKS_SCHEMA)
  @Public()
  keys() {
    return this.signing.jwks();
  }

  /**
   * Every key control signed with before and no longer publishes as live: for verifying old
   * signatures only (audit checkpoints, archived snapshots), never for accepting a new snapshot.
   */
  @Get('control-signing-keys-retired.json')
  @Header('Cache-Control', `public, max-age=${SIGNING_KEYS_MAX_AGE_S}`)
  @Returns(JWKS_SCHEMA)
  @Public()
  retiredKeys() {
    return this.signing.retiredJwks();
  }
}
