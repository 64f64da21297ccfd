import { IsByteLength, IsIn, IsString, Matches, ValidateIf } from 'class-validator';
import { PROVIDER_NAMES, ProviderName } from 'src/modules/model-providers/providers';

const NO_CONTROL = /^[^\x00-\x1f\x7f]*$/;

/**
 * POST /workspaces/{ws}/model-providers. Pattern, upstream model and base URL are checked by the
 * service (400s, connections spec section 7); the key never leaves the request except to the gateway.
 */
export class CreateModelProviderDto {
  @IsIn(PROVIDER_NAMES) provider: ProviderName;
  @IsString() @IsByteLength(1, 8192) @Matches(NO_CONTROL) api_key: string;
  @IsString() model_pattern: string;
  @IsString() upstream_model: string;
  // May be omitted, never null: a null would reach the URL check (issue 17).
  @ValidateIf((o: CreateModelProviderDto) => o.base_url !== undefined) @IsString() base_url?: string;
}
