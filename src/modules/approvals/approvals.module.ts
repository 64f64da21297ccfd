import { ApprovalsJob } from 'src/modules/approvals/approvals.job';
import { KeysModule } from 'src/modules/keys/keys.module';
import { NotificationsModule } from 'src/modules/notifications/notifications.module';
import { Module } from '@nestjs/common';
import { AuditModule } from 'src/modules/audit/audit.module';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';
import { ApprovalPoliciesController } from 'src/modules/approvals/approval-policies.controller';
import { ApprovalPoliciesService } from 'src/modules/approvals/approval-policies.service';
import { ApprovalsController } from 'src/modules/approvals/approvals.controller';
import { ApprovalsService } from 'src/modules/approvals/approvals.service';
import { InternalApprovalsController } from 'src/modules/approvals/internal-approvals.controller';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApprovalPolicyRevision } from 'src/modules/approvals/entities/approval-policy-revision.entity';
import { ApprovalPolicy } from 'src/modules/approvals/entities/approval-policy.entity';
import { ApprovalVote } from 'src/modules/approvals/entities/approval-vote.entity';
import { Approval } from 'src/modules/approvals/entities/approval.entity';

/** Approval policies, the approval inbox and votes, and the gateway's held-call routes. */
@Module({
  imports: [TypeOrmModule.forFeature([ApprovalPolicyRevision, ApprovalPolicy, ApprovalVote, Approval]), AuditModule, KeysModule, NotificationsModule, PublicationModule, WorkspacesModule],
  controllers: [ApprovalPoliciesController, ApprovalsController, InternalApprovalsController],
  providers: [ApprovalPoliciesService, ApprovalsService, ApprovalsJob],
})
export class ApprovalsModule {}
