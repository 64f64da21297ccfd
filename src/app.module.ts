import { DynamicModule, Global, Inject, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PlatformModule } from 'src/platform/platform.module';
import { SigningModule } from 'src/platform/signing/signing.module';
import { ExpressBodyMiddleware } from 'src/common/http/body';
import { NO_STORE_ROUTES, NoStoreMiddleware } from 'src/common/http/no-store.middleware';
import { AccessLogMiddleware } from 'src/platform/logging/access-log.middleware';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { databaseBounds, dataSourceOptions } from 'src/database/data-source';
import { RedisModule } from 'src/database/redis.module';
import { TransactionsModule } from 'src/database/transactions';
import { ApprovalsModule } from 'src/modules/approvals/approvals.module';
import { AuditModule } from 'src/modules/audit/audit.module';
import { CatalogModule } from 'src/modules/catalog/catalog.module';
import { DemoModule } from 'src/modules/demo/demo.module';
import { ConnectionsModule } from 'src/modules/connections/connections.module';
import { GatewayModule } from 'src/modules/gateway/gateway.module';
import { HealthModule } from 'src/modules/health/health.module';
import { IdentityModule } from 'src/modules/identity/identity.module';
import { InternalModule } from 'src/modules/internal/internal.module';
import { KeysModule } from 'src/modules/keys/keys.module';
import { ModelProvidersModule } from 'src/modules/model-providers/model-providers.module';
import { PolicyModule } from 'src/modules/policy/policy.module';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { WorkersModule } from 'src/modules/workers/workers.module';
import { ReceiptsModule } from 'src/modules/receipts/receipts.module';
import { RoutingModule } from 'src/modules/routing/routing.module';
import { StreamsModule } from 'src/modules/streams/streams.module';
import { UsageModule } from 'src/modules/usage/usage.module';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';
import { WebhooksModule } from 'src/modules/webhooks/webhooks.module';
import { NotificationsModule } from 'src/modules/notifications/notifications.module';
import { ENTITIES } from 'src/entities';

/** Every domain module; infrastructure first. */
export const DOMAIN_MODULES = [SigningModule, HealthModule, IdentityModule, AuditModule, NotificationsModule, PublicationModule, WorkspacesModule, KeysModule, InternalModule, ApprovalsModule, WorkersModule, PolicyModule, StreamsModule, ReceiptsModule, UsageModule, GatewayModule, CatalogModule, ConnectionsModule, ModelProvidersModule, RoutingModule, WebhooksModule, DemoModule];

@Global()
@Module({})
class ConfigModule {}

@Module({})
export class AppModule implements NestModule {
  /** The application for a resolved configuration (its database URL already set). */
  static register(config: AppConfig & { databaseUrl: string }, options: { jobs?: boolean } = {}): DynamicModule {
    return {
      module: AppModule,
      imports: [
        { module: ConfigModule, providers: [{ provide: APP_CONFIG, useValue: config }], exports: [APP_CONFIG], global: true },
        TypeOrmModule.forRoot(dataSourceOptions(config.databaseUrl, config.databasePoolSize, { entities: ENTITIES, bounds: databaseBounds(config) })),
        ...(options.jobs === false ? [] : [ScheduleModule.forRoot()]),
        RedisModule,
        TransactionsModule,
        PlatformModule,
        ...DOMAIN_MODULES,
      ],
    };
  }

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(AccessLogMiddleware).forRoutes('{*path}');
    consumer.apply(NoStoreMiddleware).forRoutes(NO_STORE_ROUTES);
    // Fastify reads bodies itself, after its hooks (where these middleware run).
    if (this.config.httpPlatform === 'express') consumer.apply(ExpressBodyMiddleware).forRoutes('{*path}');
  }
}
