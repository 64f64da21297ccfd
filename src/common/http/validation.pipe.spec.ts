import { IsDefined, IsIn, IsOptional } from 'class-validator';
import { ApiValidationPipe } from 'src/common/http/validation.pipe';
import { FieldValidationError } from 'src/common/http/errors';

class OptionalQuery {
  @IsOptional() @IsIn(['a', 'b']) sort: string = 'a';
}
class RequiredQuery {
  @IsDefined() @IsIn(['a', 'b']) sort!: string;
}

describe('ApiValidationPipe on queries', () => {
  const pipe = new ApiValidationPipe();
  const query = (metatype: Function, value: object) => pipe.transform(value, { type: 'query', metatype: metatype as never });

  it('answers an empty query with the defaults every time, and still refuses a bad value after it', async () => {
    for (let i = 0; i < 2; i++) {
      const instance = await query(OptionalQuery, {});
      expect(instance).toBeInstanceOf(OptionalQuery);
      expect(instance).toEqual(Object.assign(new OptionalQuery(), { sort: 'a' }));
    }
    await expect(query(OptionalQuery, { sort: 'c' })).rejects.toBeInstanceOf(FieldValidationError);
    expect(await query(OptionalQuery, { sort: 'b' })).toMatchObject({ sort: 'b' });
  });

  it('refuses an empty query every time when the DTO requires a parameter', async () => {
    for (let i = 0; i < 2; i++) await expect(query(RequiredQuery, {})).rejects.toBeInstanceOf(FieldValidationError);
  });
});
