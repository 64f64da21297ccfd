import { Module } from '@nestjs/common';
import { AuditModule } from 'src/modules/audit/audit.module';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';
import { ApprovalPoliciesController } from 'src/modules/approvals/approval-policies.controller';
import { ApprovalPoliciesService } from 'src/modules/approvals/approval-policies.service';
import { ApprovalsController } from 'src/modules/approvals/approvals.controller';
import { ApprovalsService } from 'src/modules/approvals/approvals.service';
import { InternalApprovalsController } from 'src/modules/approvals/internal-approvals.controller';

/** Approval policies, the approval inbox and votes, and the gateway's held-call routes. */
@Module({
  imports: [AuditModule, PublicationModule, WorkspacesModule],
  controllers: [ApprovalPoliciesController, ApprovalsController, InternalApprovalsController],
  providers: [ApprovalPoliciesService, ApprovalsService],
})
export class ApprovalsModule {}
