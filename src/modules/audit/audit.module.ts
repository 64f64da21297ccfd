import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditCheckpointJob } from 'src/modules/audit/audit-checkpoint.job';
import { AuditController } from 'src/modules/audit/audit.controller';
import { AuditService } from 'src/modules/audit/audit.service';
import { AuditTrailService } from 'src/modules/audit/audit-trail.service';
import { AuditChainHead } from 'src/modules/audit/entities/audit-chain-head.entity';
import { AuditCheckpoint } from 'src/modules/audit/entities/audit-checkpoint.entity';
import { AuditEvent } from 'src/modules/audit/entities/audit-event.entity';

@Module({
  imports: [TypeOrmModule.forFeature([AuditEvent, AuditChainHead, AuditCheckpoint])],
  controllers: [AuditController],
  providers: [AuditService, AuditTrailService, AuditCheckpointJob],
  exports: [AuditService, AuditTrailService],
})
export class AuditModule {}
