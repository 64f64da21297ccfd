import { IsIn, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { ROLES, Role } from 'src/platform/access/actions';

export class CreateWorkspaceDto {
  @IsString() @MinLength(1) @MaxLength(64) org_id: string;
  @IsString() @MinLength(1) @MaxLength(128) slug: string;
  /** Checked by the service: a bad `env` is a 400, not a 422. */
  @IsOptional() env?: unknown;
}

export class ListWorkspacesQuery {
  @IsOptional() @IsString() @MaxLength(64) org_id?: string;
}

export class PutMemberDto {
  @IsIn(ROLES) role: Role;
}
