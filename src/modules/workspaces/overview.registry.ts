import { Injectable } from '@nestjs/common';

/** The overview blocks other domains fill, with what an empty workspace reports. */
export const OVERVIEW_BLOCKS = {
  keys: { active: 0, total: 0 },
  connectors: { total: 0, connections_active: 0 },
  policy: { published: false, revision_id: null, published_at: null, bundle_hash: null },
  receipts: { total: 0, last_at: null },
} as const;
export type OverviewBlock = keyof typeof OVERVIEW_BLOCKS;
/** Reads one block of a workspace's overview, through the owning module's own repository. */
export type OverviewReader = (workspaceId: string) => Promise<unknown>;

/** Each block of the overview is read by the domain that owns its rows, registered here at start-up. */
@Injectable()
export class OverviewRegistry {
  private readonly readers = new Map<OverviewBlock, OverviewReader>();

  register(block: OverviewBlock, reader: OverviewReader): void {
    if (this.readers.has(block)) throw new Error(`overview block ${block} registered twice`);
    this.readers.set(block, reader);
  }

  async read(workspaceId: string): Promise<Record<OverviewBlock, unknown>> {
    const blocks = Object.keys(OVERVIEW_BLOCKS) as OverviewBlock[];
    const values = await Promise.all(blocks.map((b) => this.readers.get(b)?.(workspaceId) ?? OVERVIEW_BLOCKS[b]));
    return Object.fromEntries(blocks.map((b, i) => [b, values[i]])) as Record<OverviewBlock, unknown>;
  }
}
