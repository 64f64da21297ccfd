import { ApprovalsJob } from 'src/modules/approvals/approvals.job';
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
import { APPROVALS_ENTITIES } from 'src/modules/approvals/entities';
import { ApprovalEvents } from 'src/modules/approvals/approval-events.service';
import { ApprovalPoliciesRepository } from 'src/modules/approvals/approval-policies.repository';
import { ApprovalsRepository } from 'src/modules/approvals/approvals.repository';

/** Approval policies, the approval inbox and votes, and the gateway's held-call routes. */
@Module({
  imports: [TypeOrmModule.forFeature(APPROVALS_ENTITIES), AuditModule, NotificationsModule, PublicationModule, WorkspacesModule],
  controllers: [ApprovalPoliciesController, ApprovalsController, InternalApprovalsController],
  providers: [ApprovalPoliciesService, ApprovalsService, ApprovalsJob, ApprovalEvents, ApprovalsRepository, ApprovalPoliciesRepository],
  // For the demo seeder, which creates approval policies and holds calls through them.
  exports: [ApprovalPoliciesService, ApprovalsService],
})
export class ApprovalsModule {}
