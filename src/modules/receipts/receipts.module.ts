import { Module } from '@nestjs/common';
import { StreamsModule } from 'src/modules/streams/streams.module';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';
import { ReceiptsController } from 'src/modules/receipts/receipts.controller';
import { ReceiptsService } from 'src/modules/receipts/receipts.service';

/** Receipts read model: projected from `{prefix}:receipts`, listed and read by operators. */
@Module({ imports: [StreamsModule, WorkspacesModule], controllers: [ReceiptsController], providers: [ReceiptsService] })
export class ReceiptsModule {}
