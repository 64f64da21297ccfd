import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { Omittable } from 'src/common/http/omittable';
import { PageQuery } from 'src/common/pagination/query';
import { ENDPOINT_FORMATS, EndpointFormat } from 'src/modules/notifications/entities/notification-endpoint.entity';

export const MAX_URL = 2048;
export const MAX_DESCRIPTION = 512;
export const MAX_EVENT_TYPES = 64;
export const MAX_GRACE_SECONDS = 604_800;
export const DEFAULT_GRACE_SECONDS = 86_400;

/** POST /notification-endpoints. `url` and `event_types` are checked further by the service (scheme, target, patterns). */
export class CreateEndpointDto {
  @IsString() @MinLength(1) @MaxLength(MAX_URL) url: string;
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(MAX_EVENT_TYPES) @IsString({ each: true }) event_types: string[];
  @Omittable() @IsIn(ENDPOINT_FORMATS) format?: EndpointFormat;
  @IsOptional() @IsString() @MaxLength(MAX_DESCRIPTION) description?: string | null;
  @Omittable() @IsBoolean() enabled?: boolean;
}

/** PATCH /notification-endpoints/{id}: any of the create fields, and the revision read. */
export class UpdateEndpointDto {
  @Omittable() @IsString() @MinLength(1) @MaxLength(MAX_URL) url?: string;
  @Omittable() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(MAX_EVENT_TYPES) @IsString({ each: true }) event_types?: string[];
  @Omittable() @IsIn(ENDPOINT_FORMATS) format?: EndpointFormat;
  @IsOptional() @IsString() @MaxLength(MAX_DESCRIPTION) description?: string | null;
  @Omittable() @IsBoolean() enabled?: boolean;
  @IsInt() @Min(1) expected_revision: number;
}

export class RotateSecretDto {
  @Omittable() @IsInt() @Min(0) @Max(MAX_GRACE_SECONDS) grace_seconds?: number;
}

export class RecoverDto {
  @IsString() @MinLength(1) @MaxLength(64) since: string;
}

export class ResendDto {
  @Omittable() @IsString() @MinLength(1) @MaxLength(128) endpoint_id?: string;
}

export class AttemptsQuery extends PageQuery {
  @IsOptional() @IsIn(['succeeded', 'failed']) status?: 'succeeded' | 'failed';
}

export class MessagesQuery extends PageQuery {
  @IsOptional() @IsString() @MinLength(1) @MaxLength(64) from?: string;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(64) to?: string;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(64) type?: string;
}

export class EventsQuery {
  @IsOptional() @IsString() @MaxLength(4096) types?: string;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(128) after?: string;
}
