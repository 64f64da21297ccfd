import { Controller, Get, Param, Query } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { CATALOG_INDEX_SCHEMA, CATALOG_ROW_SCHEMA } from 'src/modules/connections/catalog.responses';
import { CatalogService, toCatalogCard, toCatalogRow } from 'src/modules/catalog/catalog.service';
import { CatalogQueryDto } from 'src/modules/connections/dto/catalog-query.dto';
import { ConnectionProjections } from 'src/modules/connections/connection-projections.service';

const BROWSE_PARAMS = ['q', 'category', 'source', 'limit', 'offset', 'cursor'] as const;

@Controller('api/v1/workspaces/:ws/catalog')
export class CatalogController {
  constructor(
    private readonly catalog: CatalogService,
    private readonly connections: ConnectionProjections,
  ) {}

  /** The whole catalog, or a browse page when any browse parameter is present (discriminated by `page`). */
  @Get()
  @Returns(CATALOG_INDEX_SCHEMA)
  @Answers(400, '`provide either cursor or offset, not both`, `malformed catalog cursor`, `catalog cursor does not match this query`')
  @Answers(422, '`unknown catalog source`', 'ValidationError')
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
  @Returns(CATALOG_ROW_SCHEMA)
  @Answers(404, '`unknown catalog slug`')
  @Action('workspace.read')
  entry(@Param('slug') slug: string) {
    return toCatalogRow(this.catalog.require(slug));
  }
}
