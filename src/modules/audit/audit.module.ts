import { Module } from '@nestjs/common';
import { AuditController } from 'src/modules/audit/audit.controller';
import { AuditService } from 'src/modules/audit/audit.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditEvent } from 'src/modules/audit/entities/audit-event.entity';

@Module({ imports: [TypeOrmModule.forFeature([AuditEvent])], controllers: [AuditController], providers: [AuditService], exports: [AuditService] })
export class AuditModule {}
