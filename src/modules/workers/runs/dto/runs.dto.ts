import { IsIn, IsInt, IsObject, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { PageQuery } from 'src/common/pagination/query';
import { ENVIRONMENT_CLASSES } from 'src/modules/workers/workers.data';
import { Omittable } from 'src/common/http/omittable';

export class StartRunDto {
  @IsString() @MinLength(1) @MaxLength(64) worker_id: string;
  @IsOptional() @IsObject() input?: Record<string, unknown>;
  @Omittable() @IsString() @MaxLength(64) session_profile_id?: string;
}

export class StartDemoRunDto {
  @IsString() @MinLength(1) @MaxLength(64) template_id: string;
  @IsOptional() @IsObject() input?: Record<string, unknown>;
}

export class EstimateDto {
  @Omittable() @IsString() @MaxLength(64) worker_id?: string;
  @Omittable() @IsString() @MaxLength(64) template_id?: string;
}

export class ControlLeaseDto {
  @IsOptional() @IsInt() @Min(60) @Max(3600) duration_seconds?: number;
}

export const RUN_STATES = ['starting', 'queued', 'running', 'paused', 'succeeded', 'failed', 'cancelled'] as const;

export class ListRunsQuery extends PageQuery {
  @IsOptional() @IsIn(RUN_STATES) status?: string;
  @Omittable() @IsString() @MaxLength(64) worker_id?: string;
}

export class CreateSessionProfileDto {
  @IsString() @MinLength(1) @MaxLength(128) name: string;
  @IsIn(ENVIRONMENT_CLASSES) environment_class: string;
  @IsOptional() @IsString() @MaxLength(2000) description?: string | null;
}

