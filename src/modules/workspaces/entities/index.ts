import { OrganizationMember } from 'src/modules/workspaces/entities/organization-member.entity';
import { Organization } from 'src/modules/workspaces/entities/organization.entity';
import { WorkspaceMember } from 'src/modules/workspaces/entities/workspace-member.entity';
import { Workspace } from 'src/modules/workspaces/entities/workspace.entity';

/** The tables workspaces owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const WORKSPACES_ENTITIES = [OrganizationMember, Organization, WorkspaceMember, Workspace];
