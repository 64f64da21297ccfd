import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validate, ValidationError } from 'class-validator';
import { FieldError, FieldValidationError } from 'src/common/http/errors';

const TYPES: Record<string, string> = {
  whitelistValidation: 'extra_forbidden',
  isString: 'string_type',
  isInt: 'int_type',
  isNumber: 'number_type',
  isBoolean: 'bool_type',
  isArray: 'list_type',
  isObject: 'dict_type',
  min: 'greater_than_equal',
  max: 'less_than_equal',
  minLength: 'string_too_short',
  maxLength: 'string_too_long',
  arrayMinSize: 'too_short',
  arrayMaxSize: 'too_long',
  isIn: 'enum',
  isEnum: 'enum',
  matches: 'string_pattern_mismatch',
};

function flatten(errors: ValidationError[], where: string, path: (string | number)[] = []): FieldError[] {
  const out: FieldError[] = [];
  for (const error of errors) {
    const loc = [...path, /^\d+$/.test(error.property) ? Number(error.property) : error.property];
    const constraints = error.constraints ?? {};
    const names = Object.keys(constraints);
    if (names.includes('whitelistValidation')) {
      out.push({ loc: [where, ...loc], msg: 'extra fields not permitted', type: 'extra_forbidden' });
    } else if (error.value === undefined && names.length > 0) {
      out.push({ loc: [where, ...loc], msg: 'field required', type: 'missing' });
    } else if (names.length > 0) {
      const name = names[names.length - 1];
      out.push({ loc: [where, ...loc], msg: constraints[name], type: TYPES[name] ?? 'value_error' });
    }
    if (error.children?.length) out.push(...flatten(error.children, where, loc));
  }
  return out;
}

/**
 * Validates bodies and queries declared with a DTO class: unknown body fields are refused (unknown
 * query parameters are dropped), no implicit
 * type conversion (DTOs convert explicitly), and failures answer 422 with `{loc, msg, type}` entries.
 */
@Injectable()
export class ApiValidationPipe implements PipeTransform {
  async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const { metatype, type } = metadata;
    if ((type !== 'body' && type !== 'query') || !metatype || [String, Number, Boolean, Object, Array].includes(metatype as never)) {
      return value;
    }
    // A request without a body (no Content-Type) validates as an empty object.
    if (type === 'body' && value === undefined) value = {};
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new FieldValidationError([{ loc: [type], msg: 'value must be a JSON object', type: 'model_type' }]);
    }
    const instance = plainToInstance(metatype, value) as object;
    const errors = await validate(instance, { whitelist: true, forbidNonWhitelisted: type === 'body', forbidUnknownValues: false });
    if (errors.length > 0) throw new FieldValidationError(flatten(errors, type));
    return instance;
  }
}
