import { Type } from 'class-transformer';
import {
  ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsObject, IsOptional, IsString, Matches, MaxLength, MinLength, ValidateIf, ValidateNested,
} from 'class-validator';
import { PageQuery } from 'src/common/pagination/query';
import { ENVIRONMENT_CLASSES, EXECUTION_MODE_NAMES, PRESET_NAMES } from 'src/modules/workers/workers.data';
import { Omittable } from 'src/common/http/omittable';

export const SLUG = /^[a-z0-9][a-z0-9-]*$/;

export class DraftWorkerDto {
  @IsString() @MinLength(1) @MaxLength(4000) job_description: string;
  @Omittable() @IsString() @MaxLength(64) template_id?: string;
  @IsOptional() @IsIn(EXECUTION_MODE_NAMES) execution_mode?: string;
  @IsOptional() @IsIn(PRESET_NAMES) permission_preset?: string;
}

export class CreateWorkerDto {
  @IsString() @MinLength(1) @MaxLength(64) @Matches(SLUG) slug: string;
  @IsString() @MinLength(1) @MaxLength(200) display_name: string;
  @IsOptional() @IsString() @MaxLength(2000) description?: string | null;
  @IsString() @MinLength(1) @MaxLength(128) agent_passport_id: string;
  @IsOptional() @IsString() @MaxLength(64) template_id?: string | null;
  @IsOptional() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(8) @IsIn(ENVIRONMENT_CLASSES, { each: true }) environment_classes?: string[];
  @IsOptional() @IsString() @MaxLength(20000) instructions?: string | null;
}

export class EnvironmentRequestDto {
  @IsIn(ENVIRONMENT_CLASSES) environment_class: string;
}

/** The revision body fields; a field sent as null is removed from the draft. */
export class RevisionBodyDto {
  @IsOptional() @IsString() @MaxLength(20000) instructions?: string | null;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(64) runtime_adapter?: string | null;
  @IsOptional() @IsObject() model_constraints?: Record<string, unknown> | null;
  @IsOptional() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(8) @ValidateNested({ each: true }) @Type(() => EnvironmentRequestDto)
  environment_requests?: EnvironmentRequestDto[] | null;
  @IsOptional() @IsArray() @ArrayMaxSize(64) @IsString({ each: true }) @Matches(/^conn_[A-Za-z0-9]{1,60}$/, { each: true }) connections?: string[] | null;
  @IsOptional() @IsArray() @ArrayMaxSize(16) @IsString({ each: true }) session_profile_ids?: string[] | null;
  @IsOptional() @IsObject() output_contract?: Record<string, unknown> | null;
}

export const BODY_FIELDS = [
  'instructions',
  'runtime_adapter',
  'model_constraints',
  'environment_requests',
  'connections',
  'session_profile_ids',
  'output_contract',
] as const;

export class PatchWorkerDto {
  @IsOptional() @IsObject() @ValidateNested() @Type(() => RevisionBodyDto) body?: RevisionBodyDto;
  @IsOptional() @IsIn(EXECUTION_MODE_NAMES) execution_mode?: string;
}

export class PublishDto {
  @IsString() @MinLength(1) @MaxLength(64) revision_id: string;
  @IsString() @Matches(/^sha256:[0-9a-f]{64}$/) revision_digest: string;
  /** Required, null for a first publish. */
  @ValidateIf((o: PublishDto) => o.expected_published_revision_id !== null) @IsString() @MaxLength(64) expected_published_revision_id: string | null;
}

export class ListWorkersQuery extends PageQuery {
  @IsOptional() @IsIn(['draft', 'published', 'retired']) lifecycle?: string;
}
