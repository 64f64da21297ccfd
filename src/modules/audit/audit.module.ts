import { Module } from '@nestjs/common';
import { AuditController } from 'src/modules/audit/audit.controller';
import { AuditService } from 'src/modules/audit/audit.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditEvent } from 'src/modules/audit/entities/audit-event.entity';
import { AuditChainHead } from 'src/modules/audit/entities/audit-chain-head.entity';
import { AuditCheckpoint } from 'src/modules/audit/entities/audit-checkpoint.entity';

@Module({ imports: [TypeOrmModule.forFeature([AuditEvent, AuditChainHead, AuditCheckpoint])], controllers: [AuditController], providers: [AuditService], exports: [AuditService] })
export class AuditModule {}
