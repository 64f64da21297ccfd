import { Global, Module } from '@nestjs/common';
import { GatewayClient } from 'src/modules/gateway/gateway.client';

/** The client of the gateway's internal API, shared by every domain that seals, exchanges, refreshes or evaluates. */
@Global()
@Module({ providers: [GatewayClient], exports: [GatewayClient] })
export class GatewayModule {}
