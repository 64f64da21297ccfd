import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsOptional, IsString, Matches, MaxLength, MinLength, ValidateNested } from 'class-validator';
import { SLUG } from 'src/modules/workers/definitions/dto/workers.dto';
import { Omittable } from 'src/common/http/omittable';

export class CreateWorkflowDto {
  @IsString() @MinLength(1) @MaxLength(64) @Matches(SLUG) slug: string;
  @IsString() @MinLength(1) @MaxLength(200) display_name: string;
  @IsOptional() @IsString() @MaxLength(2000) description?: string | null;
}

export class WorkflowStepDto {
  @IsString() @MinLength(1) @MaxLength(64) @Matches(/^[a-z0-9][a-z0-9_-]*$/) step_id: string;
  @IsString() @MinLength(1) @MaxLength(64) worker_id: string;
  @IsOptional() @IsArray() @ArrayMaxSize(64) @IsString({ each: true }) depends_on?: string[];
  @Omittable() @IsString() @MinLength(1) @MaxLength(2000) condition?: string;
}

export class PatchWorkflowDto {
  @IsArray() @ArrayMaxSize(64) @ValidateNested({ each: true }) @Type(() => WorkflowStepDto) steps: WorkflowStepDto[];
}
