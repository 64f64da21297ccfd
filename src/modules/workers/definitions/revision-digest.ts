import { canonicalJson, sha256Tagged } from 'src/common/crypto/crypto';

/** The six named parts of a Worker revision the digest covers (`permission_preset` as the bare preset name). */
export interface DigestParts {
  allowed_capabilities: unknown;
  body: Record<string, unknown>;
  execution_mode: string;
  limits: unknown;
  permission_preset: string;
  ui_actions: unknown;
}

/** `sha256:` plus SHA-256 over canonical JSON (keys sorted at every depth, no whitespace) of the six parts. */
export function revisionDigest(parts: DigestParts): string {
  return sha256Tagged(
    canonicalJson({
      allowed_capabilities: parts.allowed_capabilities,
      body: parts.body,
      execution_mode: parts.execution_mode,
      limits: parts.limits,
      permission_preset: parts.permission_preset,
      ui_actions: parts.ui_actions,
    }),
  );
}
