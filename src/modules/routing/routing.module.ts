import { Module } from '@nestjs/common';
import { AuditModule } from 'src/modules/audit/audit.module';
import { CatalogModule } from 'src/modules/catalog/catalog.module';
import { ConnectionsModule } from 'src/modules/connections/connections.module';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { CapabilitiesController } from 'src/modules/routing/capabilities.controller';
import { CapabilitiesService } from 'src/modules/routing/capabilities.service';
import { QualifiersController } from 'src/modules/routing/qualifiers.controller';
import { QualifiersService } from 'src/modules/routing/qualifiers.service';
import { QualifiersRepository } from 'src/modules/routing/qualifiers.repository';
import { ReceiptsModule } from 'src/modules/receipts/receipts.module';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ROUTING_ENTITIES } from 'src/modules/routing/entities';

/** Route qualifiers (published in the snapshot) and the read-only capability, binding and route-decision views. */
@Module({
  imports: [TypeOrmModule.forFeature(ROUTING_ENTITIES), AuditModule, CatalogModule, ConnectionsModule, PublicationModule, ReceiptsModule],
  controllers: [QualifiersController, CapabilitiesController],
  providers: [QualifiersService, CapabilitiesService, QualifiersRepository],
})
export class RoutingModule {}
