import { Module } from '@nestjs/common';
import { ApprovalPoliciesController } from 'src/modules/approvals/approval-policies.controller';
import { ApprovalPoliciesService } from 'src/modules/approvals/approval-policies.service';
import { ApprovalsController } from 'src/modules/approvals/approvals.controller';
import { ApprovalsService } from 'src/modules/approvals/approvals.service';
import { InternalApprovalsController } from 'src/modules/approvals/internal-approvals.controller';

/** Approval policies, the approval inbox and votes, and the gateway's held-call routes. */
@Module({
  controllers: [ApprovalPoliciesController, ApprovalsController, InternalApprovalsController],
  providers: [ApprovalPoliciesService, ApprovalsService],
})
export class ApprovalsModule {}
