import { Module } from '@nestjs/common';
import { ApprovalsModule } from 'src/modules/approvals/approvals.module';
import { ConnectionsModule } from 'src/modules/connections/connections.module';
import { DemoSeeder } from 'src/modules/demo/demo.seeder';
import { IdentityModule } from 'src/modules/identity/identity.module';
import { KeysModule } from 'src/modules/keys/keys.module';
import { ModelProvidersModule } from 'src/modules/model-providers/model-providers.module';
import { PolicyModule } from 'src/modules/policy/policy.module';
import { StreamsModule } from 'src/modules/streams/streams.module';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';

/**
 * Demo data for newcomers (`npm run cli -- demo:seed`); no routes. It seeds through the services of
 * the modules it imports (nothing imports it, so these imports make no cycle).
 */
@Module({
  imports: [ApprovalsModule, ConnectionsModule, IdentityModule, KeysModule, ModelProvidersModule, PolicyModule, StreamsModule, WorkspacesModule],
  providers: [DemoSeeder],
  exports: [DemoSeeder],
})
export class DemoModule {}
