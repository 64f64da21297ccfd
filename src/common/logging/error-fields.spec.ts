import { errorFields } from 'src/common/logging/error-fields';

describe('errorFields', () => {
  it('names the kind and the code of an error, never its message', () => {
    const database = Object.assign(new Error('duplicate key value violates unique constraint: Key (envelope)=(v1.secret)'), { code: '23505' });
    expect(errorFields(database)).toEqual({ error: 'Error', code: '23505' });
    expect(errorFields(new TypeError('x is secret'))).toEqual({ error: 'TypeError' });
    expect(errorFields('a thrown string')).toEqual({ error: 'string' });
    expect(errorFields(null)).toEqual({ error: 'object' });
    expect(JSON.stringify(errorFields(database))).not.toContain('secret');
  });
});
