import { OrganizationMember } from 'src/platform/tenancy/entities/organization-member.entity';
import { Organization } from 'src/platform/tenancy/entities/organization.entity';
import { WorkspaceMember } from 'src/platform/tenancy/entities/workspace-member.entity';
import { Workspace } from 'src/platform/tenancy/entities/workspace.entity';

/**
 * The tenancy tables: read by the access check of every request, written by workspaces (create,
 * members) and publication (the snapshot counters), so the platform owns them; its repositories
 * may name these and no others (test/platform/ownership.spec.ts).
 */
export const TENANCY_ENTITIES = [OrganizationMember, Organization, WorkspaceMember, Workspace];
