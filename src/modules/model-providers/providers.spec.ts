import { modelPatternProblem, upstreamModelProblem } from 'src/modules/model-providers/model-names';
import { normalizeBaseUrl } from 'src/modules/model-providers/providers';

describe('model names', () => {
  it('accepts a name, the whole-string star, a prefix star and a suffix star', () => {
    for (const pattern of ['gpt-4o', '*', '*-mini', 'gpt-*', 'a'.repeat(256)]) expect(modelPatternProblem(pattern)).toBeNull();
  });

  it('refuses a star in the middle, two stars, whitespace, control characters, empty and overlong patterns', () => {
    for (const pattern of ['gpt*4', '**', '*a*', 'a**', 'gpt 4', 'gpt\u00a04', 'x\u0000', 'x\u0085', '', 'a'.repeat(257)]) {
      expect(modelPatternProblem(pattern)).not.toBeNull();
    }
  });

  it('refuses any star in an upstream model', () => {
    expect(upstreamModelProblem('gpt-4o-2024-08-06')).toBeNull();
    for (const model of ['gpt-*', '*', 'a b', '', 'x'.repeat(257)]) expect(upstreamModelProblem(model)).not.toBeNull();
  });
});

describe('compat_custom base URL', () => {
  it('lowercases the authority, keeps the path and removes trailing slashes', () => {
    expect(normalizeBaseUrl('https://LLM.Example.COM/v1')).toBe('https://llm.example.com/v1');
    expect(normalizeBaseUrl('HTTPS://llm.example.com/Team/v1/')).toBe('https://llm.example.com/Team/v1');
    expect(normalizeBaseUrl('https://llm.example.com:8443/v1//')).toBe('https://llm.example.com:8443/v1');
    expect(normalizeBaseUrl('https://llm.example.com:443/v1')).toBe('https://llm.example.com/v1');
    expect(normalizeBaseUrl('https://[::1]:9000/v1')).toBe('https://[::1]:9000/v1');
    expect(normalizeBaseUrl('https://10.0.0.7:65535/proxy/v1')).toBe('https://10.0.0.7:65535/proxy/v1');
  });

  it('refuses anything but HTTPS with a /v1 path and no userinfo, query, fragment or bad port', () => {
    for (const url of [
      'http://llm.example.com/v1',
      'ftp://llm.example.com/v1',
      'llm.example.com/v1',
      'https://user:pw@llm.example.com/v1',
      'https://user@llm.example.com/v1',
      'https://@llm.example.com/v1',
      'https://llm.example.com/v1?x=1',
      'https://llm.example.com/v1?',
      'https://llm.example.com/v1#frag',
      'https://llm.example.com/v1#',
      'https://llm.example.com:0/v1',
      'https://llm.example.com:65536/v1',
      'https://llm.example.com:/v1',
      'https://llm.example.com:99999999/v1',
      'https://llm.example.com',
      'https://llm.example.com/',
      'https://llm.example.com/v2',
      'https://llm.example.com/v1/chat',
      'https://llm.example.com/xv1',
      'https:///v1',
      'https://llm.example.com /v1',
      ' https://llm.example.com/v1',
      'https://llm.example.com\\v1',
      `https://llm.example.com/${'a'.repeat(2048)}/v1`,
    ]) {
      expect([url, normalizeBaseUrl(url)]).toEqual([url, null]);
    }
  });
});
