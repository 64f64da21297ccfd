import { VerifiedTokens } from 'src/platform/auth/verified-tokens';

describe('verified tokens', () => {
  afterEach(() => jest.useRealTimers());

  it('remembers a token until its own expiry and forgets it after', () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const tokens = new VerifiedTokens<string>();
    tokens.set('a', 'usr_a', 1_000_500);
    expect(tokens.get('a')).toBe('usr_a');
    expect(tokens.get('b')).toBeUndefined();
    jest.setSystemTime(1_000_500);
    expect(tokens.get('a')).toBeUndefined();
  });

  it('never holds more than its capacity: expired entries go first, then everything', () => {
    jest.useFakeTimers({ now: 0 });
    const tokens = new VerifiedTokens<number>(2);
    tokens.set('old', 1, 10);
    tokens.set('live', 2, 1000);
    jest.setSystemTime(20);
    tokens.set('new', 3, 1000);
    expect([tokens.get('old'), tokens.get('live'), tokens.get('new')]).toEqual([undefined, 2, 3]);
    tokens.set('overflow', 4, 1000);
    expect([tokens.get('live'), tokens.get('new'), tokens.get('overflow')]).toEqual([undefined, undefined, 4]);
  });
});
