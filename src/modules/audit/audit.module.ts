import { Global, Module } from '@nestjs/common';
import { AuditController } from 'src/modules/audit/audit.controller';
import { AuditService } from 'src/modules/audit/audit.service';

@Global()
@Module({ controllers: [AuditController], providers: [AuditService], exports: [AuditService] })
export class AuditModule {}
