import { Global, Module } from '@nestjs/common';
import { CatalogController } from 'src/modules/catalog/catalog.controller';
import { CatalogService } from 'src/modules/catalog/catalog.service';
import { ConnectionsModule } from 'src/modules/connections/connections.module';

/** The frozen connector catalog (validated at start) and its routes; CatalogService is readable by every domain. */
@Global()
@Module({ imports: [ConnectionsModule], controllers: [CatalogController], providers: [CatalogService], exports: [CatalogService] })
export class CatalogModule {}
