import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AUDIT_ENTITIES } from 'src/modules/audit/entities';
import { AuditCheckpointJob } from 'src/modules/audit/audit-checkpoint.job';
import { AuditController } from 'src/modules/audit/audit.controller';
import { AuditService } from 'src/modules/audit/audit.service';
import { AuditTrailService } from 'src/modules/audit/audit-trail.service';
import { AuditChainRepository } from 'src/modules/audit/audit-chain.repository';
import { AuditEventsRepository } from 'src/modules/audit/audit-events.repository';

/** The audit trail (its chain, checkpoints and export); which workspaces exist through the platform's WorkspacesRepository. */
@Module({
  imports: [TypeOrmModule.forFeature(AUDIT_ENTITIES)],
  controllers: [AuditController],
  providers: [AuditEventsRepository, AuditChainRepository, AuditService, AuditTrailService, AuditCheckpointJob],
  exports: [AuditService, AuditTrailService],
})
export class AuditModule {}
