import { signServiceToken } from 'src/platform/auth/service-token';
import { SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';

const PREVIOUS = 'previous-service-secret-0123456789abcdef';
const OTHER = 'some-other-service-secret-0123456789abcd';

describe('service secret rotation (SERVICE_JWT_SECRET_PREVIOUS)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ SERVICE_JWT_SECRET_PREVIOUS: PREVIOUS });
  });
  afterAll(() => t.close());

  const lookup = async (secret: string) => {
    const token = await signServiceToken(secret, 'gateway', 'control');
    return t.http().get(`/internal/v1/keys/${'a'.repeat(64)}`).set('Authorization', `Bearer ${token}`);
  };

  it('accepts gateway tokens signed with the current or the previous secret', async () => {
    for (const secret of [SERVICE_SECRET, PREVIOUS]) {
      const res = await lookup(secret);
      expect([res.status, res.body]).toEqual([404, { detail: 'key not found' }]);
    }
  });

  it('refuses a token signed with any other secret', async () => {
    const res = await lookup(OTHER);
    expect([res.status, res.body]).toEqual([401, { detail: 'service token not accepted' }]);
  });
});
