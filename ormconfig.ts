import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from './src/database/data-source';
import { ENTITIES } from './src/entities';

/** The data source the TypeORM CLI uses (migration:generate/revert); DATABASE_URL is required here. */
export default new DataSource(dataSourceOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test', 1, { entities: ENTITIES }));
