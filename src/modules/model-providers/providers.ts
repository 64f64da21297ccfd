/** The model providers a workspace may connect (connections spec section 2, Providers). */
export const PROVIDER_NAMES = ['provider_a', 'provider_b', 'provider_c', 'compat_custom'] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

export interface ProviderDefinition {
  display_name: string;
  /** `responses` exists in the gateway's vocabulary; no provider produces it. */
  provider_kind: 'compat' | 'native_messages';
  /** How the gateway presents the key upstream (stored as the connection's `credential_scheme`). */
  auth_scheme: 'bearer' | 'x-api-key';
  /** Fixed by definition; null when the operator supplies it (`compat_custom`). */
  base_url: string | null;
}

/** Fixed hosts are deployment definitions the specification leaves out; see docs/model-providers.md. */
export const PROVIDERS: Record<ProviderName, ProviderDefinition> = {
  provider_a: { display_name: 'Provider A', provider_kind: 'compat', auth_scheme: 'bearer', base_url: 'https://api.provider-a.com/v1' },
  provider_b: { display_name: 'Provider B', provider_kind: 'native_messages', auth_scheme: 'x-api-key', base_url: 'https://api.provider-b.com/v1' },
  provider_c: { display_name: 'Provider C', provider_kind: 'compat', auth_scheme: 'bearer', base_url: 'https://api.provider-c.com/v1' },
  compat_custom: { display_name: 'Custom compatible endpoint', provider_kind: 'compat', auth_scheme: 'bearer', base_url: null },
};

export const MAX_BASE_URL = 2048;
const FORBIDDEN = /[\s\u0000-\u001f\u007f-\u009f]/u;

/**
 * A `compat_custom` base URL as stored: HTTPS only, no userinfo, no query, no fragment (not even
 * an empty `?` or `#`), a port in 1-65535 when given, a path ending in `/v1` once trailing slashes
 * are removed; the authority is lowercased and trailing slashes dropped. Null when refused.
 */
export function normalizeBaseUrl(input: string): string | null {
  if (input.length > MAX_BASE_URL || FORBIDDEN.test(input) || input.includes('?') || input.includes('#') || input.includes('\\')) return null;
  const match = /^https:\/\/([^/]*)(\/.*)?$/i.exec(input);
  if (!match || match[1] === '' || match[1].includes('@')) return null;
  const port = /:(\d*)$/.exec(match[1].replace(/^\[[^\]]*\]/, ''));
  if (port && (port[1] === '' || Number(port[1]) < 1 || Number(port[1]) > 65535)) return null;
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return null;
  }
  const path = url.pathname.replace(/\/+$/, '');
  if (!path.endsWith('/v1')) return null;
  return `https://${url.host.toLowerCase()}${path}`;
}
