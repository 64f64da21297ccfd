import { IsByteLength, IsIn, IsString, Matches } from 'class-validator';
import { Omittable } from 'src/common/http/omittable';
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
  @Omittable() @IsString() base_url?: string;
}
