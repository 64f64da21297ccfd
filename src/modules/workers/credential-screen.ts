import { FieldError, FieldValidationError } from 'src/common/http/errors';

/**
 * Recognizes credential material in free text. Each rule names a kind of secret; the matched value
 * is never returned, logged or echoed: a finding carries only the kind.
 */
const RULES: { kind: string; pattern: RegExp }[] = [
  { kind: 'a private key block', pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/ },
  { kind: 'a provider API key', pattern: /\bsk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_-]{20,}/ },
  { kind: 'a provider API key', pattern: /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}/ },
  { kind: 'a provider API key', pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/ },
  { kind: 'a provider API key', pattern: /\bgh[pousr]_[A-Za-z0-9]{30,}/ },
  { kind: 'a provider API key', pattern: /\bgithub_pat_[A-Za-z0-9_]{40,}/ },
  { kind: 'a provider API key', pattern: /\bglpat-[A-Za-z0-9_-]{20,}/ },
  { kind: 'a provider API key', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/ },
  { kind: 'a provider API key', pattern: /\bAIza[0-9A-Za-z_-]{35}/ },
  { kind: 'a provider API key', pattern: /\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}/ },
  { kind: 'a provider API key', pattern: /\b(?:hf|npm)_[A-Za-z0-9]{30,}/ },
  { kind: 'a virtual key', pattern: /\bob_(?:live|test)_[A-Za-z0-9_-]{16,}/ },
  { kind: 'a JSON Web Token', pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/ },
  { kind: 'a bearer token', pattern: /\bBearer\s+[A-Za-z0-9._~+/-]{20,}=*/ },
  { kind: 'credentials in a URL', pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@]+:[^\s/@]+@[^\s/]+/i },
  {
    kind: 'a password assignment',
    // `password = hunter2`, `api_key: "s3cr3t!!"`: a secret-named key assigned a value with a digit or symbol.
    pattern:
      /\b(?:password|passwd|pwd|passphrase|secret|client[_-]?secret|api[_-]?key|access[_-]?token|auth[_-]?token)\s*[:=]\s*['"]?(?=[^\s'"<>]*[0-9!@#$%^&*_+\-=.,;?])[^\s'"<>{}]{6,}/i,
  },
];

/** The kind of secret `text` contains, or null when it looks innocent. */
export function findCredential(text: string): string | null {
  for (const rule of RULES) if (rule.pattern.test(text)) return rule.kind;
  return null;
}

/**
 * Screens the named free-text fields (`[loc, value]` pairs, loc relative to the body) and throws
 * 422 naming every field that carries a recognizable secret, never the value itself.
 */
export function screenFields(fields: [(string | number)[], unknown][]): void {
  const errors: FieldError[] = [];
  for (const [loc, value] of fields) {
    if (typeof value !== 'string') continue;
    const kind = findCredential(value);
    if (kind) {
      errors.push({
        loc: ['body', ...loc],
        msg: `field contains credential material (${kind}); remove it and keep secrets in a connection or session profile`,
        type: 'credential_detected',
      });
    }
  }
  if (errors.length > 0) throw new FieldValidationError(errors);
}
