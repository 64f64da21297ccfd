import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { createApp, openDatabase } from 'src/bootstrap';
import { ConfigError, loadConfig } from 'src/config/config';

async function main(): Promise<void> {
  const config = loadConfig();
  const database = await openDatabase(config);
  const app = await createApp(config, database);
  await app.listen(config.port, config.host);
  const logger = new Logger('main');
  logger.log({ msg: 'listening', host: config.host, port: config.port, platform: config.httpPlatform });
  // Graceful shutdown: stop accepting, finish in-flight requests, close pools, then the embedded database.
  const stop = async (signal: string) => {
    logger.log({ msg: 'shutting down', signal });
    await app.close();
    await database.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof ConfigError ? error.message : `startup failed: ${error instanceof Error ? error.message : String(error)}`}\n`);
  process.exit(1);
});
