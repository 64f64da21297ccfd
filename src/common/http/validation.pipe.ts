import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validate, ValidationError } from 'class-validator';
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

const INT32_MAX = 2 ** 31 - 1;
const INT32_MIN = -(2 ** 31);

/** The `@IsInt()` properties of a DTO class, with whether each declares its own `@Min` and `@Max`. */
const integerFields = new Map<Function, { name: string; min: boolean; max: boolean }[]>();
function integersOf(target: Function): { name: string; min: boolean; max: boolean }[] {
  let fields = integerFields.get(target);
  if (!fields) {
    const metadata = getMetadataStorage().getTargetValidationMetadatas(target, '', true, false);
    const declared = (name: string, rule: string) => metadata.some((m) => m.propertyName === name && m.name === rule);
    const names = new Set(metadata.filter((m) => m.name === 'isInt').map((m) => m.propertyName));
    fields = [...names].map((name) => ({ name, min: declared(name, 'min'), max: declared(name, 'max') }));
    integerFields.set(target, fields);
  }
  return fields;
}

/**
 * Every integer is range checked before it can reach SQL: an `@IsInt()` field without its own
 * `@Max` or `@Min` is held to int32 (the revision and counter columns), in nested DTOs too.
 */
function integerRangeErrors(instance: object, loc: (string | number)[]): FieldError[] {
  const out: FieldError[] = [];
  const record = instance as Record<string, unknown>;
  for (const field of integersOf(instance.constructor)) {
    const value = record[field.name];
    if (typeof value !== 'number') continue;
    if (!field.max && value > INT32_MAX) out.push({ loc: [...loc, field.name], msg: `${field.name} must not be greater than ${INT32_MAX}`, type: 'less_than_equal' });
    if (!field.min && value < INT32_MIN) out.push({ loc: [...loc, field.name], msg: `${field.name} must not be less than ${INT32_MIN}`, type: 'greater_than_equal' });
  }
  for (const [key, value] of Object.entries(record)) {
    const items: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : [[key, value]];
    for (const [at, item] of items) {
      if (item !== null && typeof item === 'object' && item.constructor !== Object && !Array.isArray(item)) {
        out.push(...integerRangeErrors(item, Array.isArray(value) ? [...loc, key, at] : [...loc, key]));
      }
    }
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
    const ranges = integerRangeErrors(instance, [type]);
    if (ranges.length > 0) throw new FieldValidationError(ranges);
    return instance;
  }
}
