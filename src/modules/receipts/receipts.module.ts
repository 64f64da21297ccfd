import { Module } from '@nestjs/common';
import { ReceiptsController } from 'src/modules/receipts/receipts.controller';
import { ReceiptsService } from 'src/modules/receipts/receipts.service';

/** Receipts read model: projected from `{prefix}:receipts`, listed and read by operators. */
@Module({ controllers: [ReceiptsController], providers: [ReceiptsService] })
export class ReceiptsModule {}
