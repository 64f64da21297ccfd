import { Schema, closedObject, count } from 'src/common/http/document-schema';
import { ENVIRONMENT_CLASSES, EXECUTION_MODE_NAMES, PRESET_NAMES } from 'src/modules/workers/workers.data';

/*
 * The schema pieces every part of the Workers surface uses (reference/, definitions/, runs/).
 * Their `*_SCHEMA` constants are named components of the OpenAPI document through
 * workers.responses.ts, which re-exports this file.
 */

export const version: Schema = { const: 1 };
export const environmentClass: Schema = { enum: [...ENVIRONMENT_CLASSES] };
export const environmentClasses: Schema = { type: 'array', items: environmentClass };
export const flag: Schema = { type: 'boolean' };
export const executionMode: Schema = { enum: [...EXECUTION_MODE_NAMES] };
export const preset: Schema = { enum: [...PRESET_NAMES] };
export const prefixed = (prefix: string): Schema => ({ type: 'string', pattern: `^${prefix}_` });
const nextCursor: Schema = { type: ['string', 'null'], description: 'Null on the last page.' };

/** Every workspace read's `capabilities` block, from the caller's role and the frozen flag. */
export const CAPABILITIES_SCHEMA: Schema = closedObject({
  can_read: flag,
  can_author: flag,
  can_run: flag,
  can_publish: flag,
  can_take_control: flag,
  can_manage_billing: flag,
});

/** A limit: `{kind: limited, value}` or `{kind: unlimited}` (no value). */
export const LIMIT_SCHEMA: Schema = {
  oneOf: [closedObject({ kind: { const: 'limited' }, value: count }), closedObject({ kind: { const: 'unlimited' } })],
};

/** A page of `items` under `key`, with the next cursor and the capabilities block. */
export const pageOf = (key: string, items: Schema): Schema =>
  closedObject({ [key]: { type: 'array', items }, next_cursor: nextCursor, capabilities: CAPABILITIES_SCHEMA });

/** One document under `key` with the capabilities block. */
export const withCapabilities = (key: string, document: Schema): Schema => closedObject({ [key]: document, capabilities: CAPABILITIES_SCHEMA });
