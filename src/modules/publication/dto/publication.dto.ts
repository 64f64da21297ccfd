import { Type } from 'class-transformer';
import { IsInt, IsString, Matches, Max, MaxLength, Min } from 'class-validator';

/** Snapshot versions are `integer` columns. */
export const VERSION_MAX = 2 ** 31 - 1;

/** POST /internal/v1/workspaces/{ws}/snapshot/applied (CONTRACT.md 4.5). */
export class SnapshotAppliedDto {
  /** 1-128 printable ASCII characters. */
  @IsString() @Matches(/^[\x20-\x7e]{1,128}$/) instance_id: string;
  @IsInt() @Min(1) @Max(VERSION_MAX) version: number;
  @IsString() @Matches(/^sha256:[0-9a-f]{64}$/) digest: string;
  /** RFC 3339; parsed by the controller. */
  @IsString() @MaxLength(64) applied_at: string;
}

/** GET .../publication/diff: two kept versions. */
export class SnapshotDiffQuery {
  @Type(() => Number) @IsInt() @Min(1) @Max(VERSION_MAX) from: number;
  @Type(() => Number) @IsInt() @Min(1) @Max(VERSION_MAX) to: number;
}
