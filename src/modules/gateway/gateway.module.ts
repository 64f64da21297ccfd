import { Module } from '@nestjs/common';
import { GatewayClient } from 'src/modules/gateway/gateway.client';

/** The client of the gateway's internal API, imported by every domain that seals, exchanges, refreshes or evaluates. */
@Module({ providers: [GatewayClient], exports: [GatewayClient] })
export class GatewayModule {}
