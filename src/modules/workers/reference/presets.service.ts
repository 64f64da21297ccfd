import { Injectable } from '@nestjs/common';
import { CatalogService } from 'src/modules/catalog/catalog.service';
import { ConnectionsService } from 'src/modules/connections/connections.service';
import { compileAllPresets, compilePreset, CompiledPreset } from 'src/modules/workers/reference/presets';
import { COMPUTER_USE_ACTIONS, ReviewedTool } from 'src/modules/workers/reference/reviewed-tools';
import { PresetName } from 'src/modules/workers/workers.data';

const GUARANTEE = { read: 'read_only', create: 'reversible', update: 'reversible', delete: 'irreversible', external_side_effect: 'irreversible' } as const;

/**
 * The permission presets of a workspace, compiled from the reviewed tool descriptions of its
 * connector packs (the catalog tools of every connector the workspace holds a non-disabled tool
 * connection on) plus the reviewed computer-use actions of the environment classes.
 */
@Injectable()
export class PresetsService {
  constructor(
    private readonly connections: ConnectionsService,
    private readonly catalog: CatalogService,
  ) {}

  async compileAll(workspaceId: string): Promise<CompiledPreset[]> {
    return compileAllPresets(await this.reviewedTools(workspaceId));
  }

  async compile(workspaceId: string, preset: PresetName): Promise<CompiledPreset> {
    return compilePreset(preset, await this.reviewedTools(workspaceId));
  }

  private async reviewedTools(workspaceId: string): Promise<ReviewedTool[]> {
    const packs = await this.connections.toolSlugs(workspaceId);
    const verified = this.catalog
      .tools()
      .filter((tool) => packs.has(tool.connector_slug))
      .map((tool): ReviewedTool => {
        const effect = this.catalog.capability(tool.capability_id)?.effect_kind ?? (tool.effect === 'read' ? 'read' : 'external_side_effect');
        const source = this.catalog.connector(tool.connector_slug)?.sources.find((s) => s.provider === 'native');
        return {
          capability_class: 'verified_capability',
          environment_class: null,
          action: tool.name,
          connector: tool.connector_slug,
          description: tool.description,
          effect_kind: effect,
          semantic_guarantee: GUARANTEE[effect],
          high_impact: effect === 'delete' || effect === 'external_side_effect',
          allowed_domains: source?.allowed_mcp_origins ?? [],
          statement: tool.description,
          capability_hint: tool.capability_id,
        };
      });
    return [...verified, ...COMPUTER_USE_ACTIONS];
  }
}
