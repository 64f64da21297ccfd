import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { PageQuery } from 'src/common/pagination/query';
import { formatTime, formatTimeRequired } from 'src/common/time/time';
import { isUniqueViolation } from 'src/database/errors';
import { screenFields } from 'src/modules/workers/credential-screen';
import { CreateSessionProfileDto } from 'src/modules/workers/runs/dto/runs.dto';
import { SessionProfilesRepository } from 'src/modules/workers/runs/session-profiles.repository';
import { cursorPosition, page } from 'src/modules/workers/paging';
import { capabilitiesFor } from 'src/modules/workers/workers.common';
import { WorkerSessionProfile } from 'src/modules/workers/entities/worker-session-profile.entity';

export const toSessionProfileDocument = (row: WorkerSessionProfile) => ({
  schema_version: 1,
  session_profile_id: row.id,
  workspace_id: row.workspaceId,
  name: row.name,
  environment_class: row.environmentClass,
  description: row.description,
  status: row.status,
  created_by: { kind: 'operator', id: row.createdByUserId },
  created_at: formatTimeRequired(row.createdAt),
  revoked_at: formatTime(row.revokedAt),
});

/**
 * Session profiles: named, reusable environment sessions (a signed-in browser, say) a Worker
 * revision may reference. Control stores the profile's identity and status only, never session
 * material; revoking is final and idempotent, and a revoked profile is refused at run start.
 */
@Injectable()
export class SessionProfilesService {
  constructor(
    private readonly repository: SessionProfilesRepository,
    private readonly access: WorkspaceAccess,
  ) {}

  async create(ctx: WorkspaceContext, dto: CreateSessionProfileDto) {
    screenFields([
      [['name'], dto.name],
      [['description'], dto.description],
    ]);
    return this.access.mutate(ctx, async (tx, ws) => {
      try {
        const row = await this.repository.insert(tx.manager, {
          id: newId('wsp'),
          workspaceId: ws.id,
          name: dto.name,
          environmentClass: dto.environment_class,
          description: dto.description ?? null,
          status: 'active',
          createdByUserId: ws.operator.userId,
        });
        return toSessionProfileDocument(row);
      } catch (error) {
        if (isUniqueViolation(error)) throw new ApiError(409, 'session profile name already exists');
        throw error;
      }
    });
  }

  async list(ws: WorkspaceContext, q: PageQuery) {
    const rows = await this.repository.page(ws.id, cursorPosition(`session-profiles:${ws.id}`, q.cursor), q.limit);
    const result = page(`session-profiles:${ws.id}`, rows, q.limit);
    return { session_profiles: result.rows.map(toSessionProfileDocument), next_cursor: result.next_cursor, capabilities: capabilitiesFor(ws) };
  }

  async get(ws: WorkspaceContext, id: string) {
    const row = await this.repository.find(ws.id, id);
    if (!row) throw new ApiError(404, 'session profile not found');
    return { session_profile: toSessionProfileDocument(row), capabilities: capabilitiesFor(ws) };
  }

  async revoke(ctx: WorkspaceContext, id: string) {
    return this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.repository.revoke(tx.manager, ws.id, id);
      if (!row) throw new ApiError(404, 'session profile not found');
      return toSessionProfileDocument(row);
    });
  }
}
