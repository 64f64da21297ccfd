import { Module } from '@nestjs/common';
import { StreamsModule } from 'src/modules/streams/streams.module';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';
import { ReceiptsController } from 'src/modules/receipts/receipts.controller';
import { ReceiptsProjector } from 'src/modules/receipts/receipts.projector';
import { ReceiptsRepository } from 'src/modules/receipts/receipts.repository';
import { ReceiptsService } from 'src/modules/receipts/receipts.service';
import { ReceiptReadsRepository } from 'src/modules/receipts/receipt-reads.repository';
import { TypeOrmModule } from '@nestjs/typeorm';
import { RECEIPTS_ENTITIES } from 'src/modules/receipts/entities';

/** Receipts read model: projected from `{prefix}:receipts`, listed and read by operators. */
@Module({
  imports: [TypeOrmModule.forFeature(RECEIPTS_ENTITIES), StreamsModule, WorkspacesModule],
  controllers: [ReceiptsController],
  providers: [ReceiptsRepository, ReceiptsProjector, ReceiptsService, ReceiptReadsRepository],
  exports: [ReceiptReadsRepository],
})
export class ReceiptsModule {}
