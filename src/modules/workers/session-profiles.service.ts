import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { WorkspaceContext } from 'src/common/access/context';
import { WorkspaceAccess } from 'src/common/access/workspace-access.service';
import { ApiError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { PageQuery } from 'src/common/pagination/query';
import { formatTime, formatTimeRequired } from 'src/common/time/time';
import { isUniqueViolation } from 'src/database/errors';
import { screenFields } from 'src/modules/workers/credential-screen';
import { CreateSessionProfileDto } from 'src/modules/workers/dto/runs.dto';
import { cursorPosition, page } from 'src/modules/workers/paging';
import { capabilitiesFor } from 'src/modules/workers/workers.common';

export interface SessionProfileRow {
  id: string;
  workspace_id: string;
  name: string;
  environment_class: string;
  description: string | null;
  status: string;
  created_by_user_id: string;
  created_at: Date;
  revoked_at: Date | null;
}

const COLUMNS = `id, workspace_id, name, environment_class, description, status, created_by_user_id, created_at, revoked_at`;

export const toSessionProfileDocument = (row: SessionProfileRow) => ({
  schema_version: 1,
  session_profile_id: row.id,
  workspace_id: row.workspace_id,
  name: row.name,
  environment_class: row.environment_class,
  description: row.description,
  status: row.status,
  created_by: { kind: 'operator', id: row.created_by_user_id },
  created_at: formatTimeRequired(row.created_at),
  revoked_at: formatTime(row.revoked_at),
});

/**
 * Session profiles: named, reusable environment sessions (a signed-in browser, say) a Worker
 * revision may reference. Control stores the profile's identity and status only, never session
 * material; revoking is final and idempotent, and a revoked profile is refused at run start.
 */
@Injectable()
export class SessionProfilesService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly access: WorkspaceAccess,
  ) {}

  async create(ctx: WorkspaceContext, dto: CreateSessionProfileDto) {
    screenFields([
      [['name'], dto.name],
      [['description'], dto.description],
    ]);
    return this.access.mutate(ctx, async (tx, ws) => {
      try {
        const [row]: SessionProfileRow[] = await tx.manager.query(
          `INSERT INTO worker_session_profiles (id, workspace_id, name, environment_class, description, status, created_by_user_id)
           VALUES ($1, $2, $3, $4, $5, 'active', $6) RETURNING ${COLUMNS}`,
          [newId('wsp'), ws.id, dto.name, dto.environment_class, dto.description ?? null, ws.operator.userId],
        );
        return toSessionProfileDocument(row);
      } catch (error) {
        if (isUniqueViolation(error)) throw new ApiError(409, 'session profile name already exists');
        throw error;
      }
    });
  }

  async list(ws: WorkspaceContext, q: PageQuery) {
    const after = cursorPosition(q.cursor);
    const rows: SessionProfileRow[] = await this.dataSource.query(
      `SELECT ${COLUMNS} FROM worker_session_profiles WHERE workspace_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) > ($2, $3))
       ORDER BY created_at, id LIMIT $4`,
      [ws.id, after?.at ?? null, after?.id ?? null, q.limit + 1],
    );
    const result = page(rows, q.limit);
    return { session_profiles: result.rows.map(toSessionProfileDocument), next_cursor: result.next_cursor, capabilities: capabilitiesFor(ws) };
  }

  async get(ws: WorkspaceContext, id: string) {
    const rows: SessionProfileRow[] = await this.dataSource.query(`SELECT ${COLUMNS} FROM worker_session_profiles WHERE workspace_id = $1 AND id = $2`, [ws.id, id]);
    if (!rows[0]) throw new ApiError(404, 'session profile not found');
    return { session_profile: toSessionProfileDocument(rows[0]), capabilities: capabilitiesFor(ws) };
  }

  async revoke(ctx: WorkspaceContext, id: string) {
    return this.access.mutate(ctx, async (tx, ws) => {
      // an UPDATE ... RETURNING answers [rows, affected count]
      const [rows]: [SessionProfileRow[], number] = await tx.manager.query(
        `UPDATE worker_session_profiles SET status = 'revoked', revoked_at = coalesce(revoked_at, clock_timestamp())
         WHERE workspace_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
        [ws.id, id],
      );
      if (!rows[0]) throw new ApiError(404, 'session profile not found');
      return toSessionProfileDocument(rows[0]);
    });
  }
}
