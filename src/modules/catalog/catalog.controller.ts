import { Controller, Get, Param, Query } from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { Lane, LANES } from 'src/modules/catalog/catalog.schema';
import { CATALOG_CURSOR_MAX, CATALOG_OFFSET_MAX, CatalogService, toCatalogCard, toCatalogRow } from 'src/modules/catalog/catalog.service';
import { ConnectionsService } from 'src/modules/connections/connections.service';

export class CatalogQueryDto {
  @IsOptional() @IsString() @MaxLength(64) q?: string;
  @IsOptional() @IsString() @MaxLength(64) category?: string;
  @IsOptional() @IsIn(LANES, { message: 'unknown catalog source' }) source?: Lane;
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(100) limit?: number;
  @IsOptional() @Type(() => Number) @IsInt() @Min(0) @Max(CATALOG_OFFSET_MAX) offset?: number;
  @IsOptional() @IsString() @MaxLength(CATALOG_CURSOR_MAX) cursor?: string;
}

const BROWSE_PARAMS = ['q', 'category', 'source', 'limit', 'offset', 'cursor'] as const;

@Controller('api/v1/workspaces/:ws/catalog')
export class CatalogController {
  constructor(
    private readonly catalog: CatalogService,
    private readonly connections: ConnectionsService,
  ) {}

  /** The whole catalog, or a browse page when any browse parameter is present (discriminated by `page`). */
  @Get()
  @Action('workspace.read')
  async index(@Workspace() ws: WorkspaceContext, @Query() query: CatalogQueryDto) {
    const head = { schema_version: this.catalog.schemaVersion, generated_at: this.catalog.generatedAt };
    if (!BROWSE_PARAMS.some((p) => query[p] !== undefined)) {
      const rows = this.catalog.connectors();
      const held = await this.connections.bySlug(ws, rows.map((c) => c.slug));
      return { ...head, connectors: rows.map((c) => ({ ...toCatalogRow(c), connections: held.get(c.slug) ?? [] })) };
    }
    const { rows, ...rest } = this.catalog.browse(query);
    const held = await this.connections.bySlug(ws, rows.map((c) => c.slug));
    return { ...head, connectors: rows.map((c) => ({ ...toCatalogCard(c), connections: held.get(c.slug) ?? [] })), ...rest };
  }

  @Get(':slug')
  @Action('workspace.read')
  entry(@Param('slug') slug: string) {
    return toCatalogRow(this.catalog.require(slug));
  }
}
