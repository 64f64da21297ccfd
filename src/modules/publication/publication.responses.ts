import { Schema } from 'src/common/http/document-schema';

/** The `publication` object of the documents that report one (`toPublication`): `published_version` once a version has published. */
export const PUBLICATION_SCHEMA: Schema = {
  type: 'object',
  properties: {
    state: { enum: ['published', 'pending'] },
    requested_version: { type: 'integer', minimum: 1 },
    published_version: { type: 'integer', minimum: 1 },
  },
  required: ['state', 'requested_version'],
  additionalProperties: false,
};
