import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Env } from 'src/platform/access/context';

/**
 * Thrown by a contributor that cannot produce its part from committed state right now (compiler
 * busy, invalid bundle, undeserializable row). Publication stays pending and is retried; the
 * internal snapshot route answers 503 `snapshot_unavailable`.
 */
export class SnapshotUnavailableError extends Error {}

export interface SnapshotWorkspace {
  id: string;
  env: Env;
  version: number;
}

/** Reads one domain's part of the snapshot from committed state (inside the snapshot's read transaction). */
export type SnapshotContributor = (manager: EntityManager, workspace: SnapshotWorkspace) => Promise<unknown>;

/** The parts of the snapshot (CONTRACT.md 4.5) a domain may contribute, each with its value when nothing is registered. */
export const SNAPSHOT_PARTS = {
  policy: null,
  approval_rules: null,
  connections: [],
  models: [],
  route_qualifiers: [],
  pricebook: null,
  webhook_subscriptions: [],
} as const;
export type SnapshotPart = keyof typeof SNAPSHOT_PARTS;

/**
 * The one registration point through which domains feed the snapshot: a module registers its
 * contributor at start-up; the publisher never names a domain.
 */
@Injectable()
export class SnapshotRegistry {
  private readonly contributors = new Map<SnapshotPart, SnapshotContributor>();

  register(part: SnapshotPart, contributor: SnapshotContributor): void {
    if (this.contributors.has(part)) throw new Error(`snapshot part ${part} registered twice`);
    this.contributors.set(part, contributor);
  }

  async build(manager: EntityManager, workspace: SnapshotWorkspace): Promise<Record<string, unknown>> {
    const parts: Record<string, unknown> = {};
    for (const part of Object.keys(SNAPSHOT_PARTS) as SnapshotPart[]) {
      const contributor = this.contributors.get(part);
      parts[part] = contributor ? await contributor(manager, workspace) : SNAPSHOT_PARTS[part];
    }
    return parts;
  }
}
