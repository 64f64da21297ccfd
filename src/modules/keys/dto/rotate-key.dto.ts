import { IsInt, IsOptional, Max, Min } from 'class-validator';

/** Longest rotation grace: seven days. */
export const MAX_GRACE_SECONDS = 604_800;
/** The grace the default rotation gives agents to pick up the new secret: one day. */
export const DEFAULT_GRACE_SECONDS = 86_400;

/** POST /workspaces/{ws}/keys/{key_id}/rotate. */
export class RotateKeyDto {
  /** How long the replaced secret keeps working (0 ends it at once; null or omitted: the default); capped by the key's own expiry. */
  @IsOptional() @IsInt() @Min(0) @Max(MAX_GRACE_SECONDS) grace_seconds?: number | null;
}
