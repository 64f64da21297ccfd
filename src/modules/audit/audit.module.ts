import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AUDIT_ENTITIES } from 'src/modules/audit/entities';
import { AuditCheckpointJob } from 'src/modules/audit/audit-checkpoint.job';
import { AuditController } from 'src/modules/audit/audit.controller';
import { AuditService } from 'src/modules/audit/audit.service';
import { AuditTrailService } from 'src/modules/audit/audit-trail.service';

@Module({
  imports: [TypeOrmModule.forFeature(AUDIT_ENTITIES)],
  controllers: [AuditController],
  providers: [AuditService, AuditTrailService, AuditCheckpointJob],
  exports: [AuditService, AuditTrailService],
})
export class AuditModule {}
