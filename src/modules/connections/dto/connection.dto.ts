import { IsByteLength, IsIn, IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { Omittable } from 'src/common/http/omittable';
import { LANES, Lane } from 'src/modules/catalog/catalog.schema';

const NO_CONTROL = /^[^\x00-\x1f\x7f]*$/;
const MAX_SECRET_BYTES = 8192;

export class StartConnectionDto {
  @IsString() @MinLength(1) @MaxLength(128) slug: string;
  @IsIn(LANES) source: Lane;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(512) @Matches(NO_CONTROL) client_id?: string;
  @Omittable() @IsString() @IsByteLength(1, MAX_SECRET_BYTES) @Matches(NO_CONTROL) client_secret?: string;
}

export class RestrictedKeyDto {
  @IsString() @IsByteLength(1, MAX_SECRET_BYTES) @Matches(NO_CONTROL) api_key: string;
}

export class ReconnectDto {
  @Omittable() @IsString() @IsByteLength(1, MAX_SECRET_BYTES) @Matches(NO_CONTROL) client_secret?: string;
  @Omittable() @IsString() @IsByteLength(1, MAX_SECRET_BYTES) @Matches(NO_CONTROL) api_key?: string;
}

export class CatalogProviderDto {
  @IsIn(['broker_a', 'broker_b']) provider: 'broker_a' | 'broker_b';
  @IsString() @IsByteLength(1, MAX_SECRET_BYTES) @Matches(NO_CONTROL) api_key: string;
}

export class FederatedCompleteDto {
  @IsString() @Matches(/^cxs_[a-f0-9]{32}$/) catalog_session_id: string;
  /** Checked by the service: its failures are a 400 `invalid upstream connection id`. */
  @IsString() @MaxLength(4096) upstream_connection_id: string;
  @IsString() @MinLength(1) @MaxLength(2048) mcp_url: string;
}
