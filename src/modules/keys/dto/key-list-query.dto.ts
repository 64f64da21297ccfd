import { IsIn, IsOptional } from 'class-validator';

export const KEY_SORTS = ['created', 'last_used'] as const;
export type KeySort = (typeof KEY_SORTS)[number];

/** GET /workspaces/{ws}/keys: `sort` `created` (oldest first, the default) or `last_used` (never used first, then longest unused). */
export class KeyListQueryDto {
  @IsOptional() @IsIn(KEY_SORTS) sort: KeySort = 'created';
}
