import { Module } from '@nestjs/common';
import { CatalogService } from 'src/modules/catalog/catalog.service';

/**
 * The frozen connector catalog, validated at start: a pure read that imports no other domain.
 * Its routes live in `connections` (each row carries the workspace's connections on the slug).
 */
@Module({ providers: [CatalogService], exports: [CatalogService] })
export class CatalogModule {}
