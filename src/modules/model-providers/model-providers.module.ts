import { Module } from '@nestjs/common';
import { GatewayModule } from 'src/modules/gateway/gateway.module';
import { ModelProvidersController } from 'src/modules/model-providers/model-providers.controller';
import { ModelProvidersService } from 'src/modules/model-providers/model-providers.service';
import { PricingController } from 'src/modules/model-providers/pricing.controller';
import { PricingService } from 'src/modules/model-providers/pricing.service';

/** Model-provider connections and the workspace pricebook. */
@Module({ imports: [GatewayModule], controllers: [ModelProvidersController, PricingController], providers: [ModelProvidersService, PricingService] })
export class ModelProvidersModule {}
