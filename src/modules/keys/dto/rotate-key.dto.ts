import { IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';
import { Omittable } from 'src/common/http/omittable';

/** Longest rotation grace: seven days. */
export const MAX_GRACE_SECONDS = 604_800;
/** The grace the default rotation gives agents to pick up the new secret: one day. */
export const DEFAULT_GRACE_SECONDS = 86_400;

/** POST /workspaces/{ws}/keys/{key_id}/rotate. */
export class RotateKeyDto {
  /** How long the replaced secret keeps working (0 ends it at once; null or omitted: the default); capped by the key's own expiry. */
  @IsOptional() @IsInt() @Min(0) @Max(MAX_GRACE_SECONDS) grace_seconds?: number | null;
  /**
   * Precondition: the last four characters of the secret the caller believes current. When it is
   * not the key's current `last4`, the key was rotated since the caller read it: 409, nothing
   * written. The safe way to rotate one key from two places.
   */
  @Omittable() @IsString() @Length(4, 4) expected_last4?: string;
}
