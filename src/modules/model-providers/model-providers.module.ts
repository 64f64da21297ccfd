import { Module } from '@nestjs/common';
import { AuditModule } from 'src/modules/audit/audit.module';
import { ConnectionsModule } from 'src/modules/connections/connections.module';
import { GatewayModule } from 'src/modules/gateway/gateway.module';
import { ModelProvidersController } from 'src/modules/model-providers/model-providers.controller';
import { ModelProvidersService } from 'src/modules/model-providers/model-providers.service';
import { PricingController } from 'src/modules/model-providers/pricing.controller';
import { PricingService } from 'src/modules/model-providers/pricing.service';
import { PricebooksRepository } from 'src/modules/model-providers/pricebooks.repository';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MODEL_PROVIDERS_ENTITIES } from 'src/modules/model-providers/entities';

/** Model-provider connections and the workspace pricebook. */
@Module({
  imports: [TypeOrmModule.forFeature(MODEL_PROVIDERS_ENTITIES), AuditModule, ConnectionsModule, GatewayModule, PublicationModule],
  controllers: [ModelProvidersController, PricingController],
  providers: [PricebooksRepository, ModelProvidersService, PricingService],
  exports: [ModelProvidersService, PricingService],
})
export class ModelProvidersModule {}
