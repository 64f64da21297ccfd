import { PlatformModule } from 'src/platform/platform.module';
import { DynamicModule, Provider } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Client } from 'pg';
import { Column, DataSource, Entity, PrimaryColumn } from 'typeorm';
import { DOMAIN_MODULES } from 'src/app.module';
import { dataSourceOptions } from 'src/database/data-source';
import { ENTITIES } from 'src/entities';
import { runMigrations } from 'src/database/migrate';
import { Pricebook } from 'src/modules/model-providers/entities/pricebook.entity';
import { createSuiteDatabase } from 'test/support/database';
import { compareSchema, describeDatabase, describeEntities, TableShape } from 'test/support/schema-agreement';

/** A deliberately wrong mapping of `pricebooks`: a column too few, one too many, a wrong type and nullability. */
@Entity({ name: 'pricebooks' })
class WrongPricebook {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'revision', type: 'bigint' })
  revision: string;

  @Column({ name: 'prices', type: 'jsonb', nullable: true })
  prices: unknown;

  @Column({ name: 'updated_by', type: 'text', nullable: true })
  updatedBy: string | null;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @Column({ name: 'currency', type: 'text' })
  currency: string;
}

describe('entities and migrations', () => {
  let db: Awaited<ReturnType<typeof createSuiteDatabase>>;
  let client: Client;
  let tables: TableShape[];

  beforeAll(async () => {
    db = await createSuiteDatabase();
    await runMigrations(db.url);
    client = new Client({ connectionString: db.url });
    await client.connect();
    tables = await describeDatabase(client, 'typeorm_migrations');
  });

  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  async function entityShapes(entities: DataSource['options']['entities']) {
    const dataSource = new DataSource({ ...dataSourceOptions(db.url, 1), entities });
    await dataSource.initialize();
    try {
      return describeEntities(dataSource.entityMetadatas);
    } finally {
      await dataSource.destroy();
    }
  }

  it('agree column by column: every table has exactly one entity with the same names, types, nullability and primary key', async () => {
    expect(tables.length).toBeGreaterThanOrEqual(35);
    expect(compareSchema(tables, await entityShapes(ENTITIES))).toEqual([]);
  });

  it('name every difference when an entity is wrong, missing or extra', async () => {
    const wrong = await entityShapes([...ENTITIES.filter((e) => e !== Pricebook), WrongPricebook]);
    expect(compareSchema(tables, wrong)).toEqual([
      'pricebooks.revision: type bigint in WrongPricebook, integer in the database',
      'pricebooks.prices: nullable in WrongPricebook, not null in the database',
      'pricebooks.updated_at: type timestamptz in WrongPricebook, timestamptz(3) in the database',
      'pricebooks.currency: in entity WrongPricebook, not in the database',
    ]);

    const shapes = await entityShapes(ENTITIES);
    const pricebook = shapes.find((s) => s.table === 'pricebooks')!;
    const edited = [
      ...shapes.filter((s) => s !== pricebook),
      { ...pricebook, columns: pricebook.columns.filter((c) => c.name !== 'updated_by'), identity: [] },
      { ...pricebook, entity: 'PricebookAgain' },
      { entity: 'Ghost', table: 'ghosts', columns: [], identity: [] },
    ];
    expect(compareSchema(tables, edited)).toEqual(['entity Ghost: maps table ghosts, which the migrations do not create', 'table pricebooks: 2 entities (Pricebook, PricebookAgain)']);
    expect(compareSchema(tables, edited.slice(0, -2))).toEqual(['pricebooks.updated_by: missing from entity Pricebook', 'pricebooks: primary key () in Pricebook, (workspace_id) in the database']);
    expect(compareSchema(tables, shapes.filter((s) => s !== pricebook))).toEqual(['table pricebooks: no entity']);
  });

  it('each entity is registered with TypeOrmModule.forFeature by exactly one module, and every registered entity is in ENTITIES', () => {
    // PlatformModule registers the tenancy tables (src/platform/tenancy), which the access check of every request reads.
    const registrations = [PlatformModule, ...DOMAIN_MODULES].flatMap((module) =>
      ((Reflect.getMetadata('imports', module) ?? []) as DynamicModule[])
        .filter((imported) => imported.module === TypeOrmModule)
        .flatMap((feature) => (feature.providers ?? []).map((p: Provider) => ({ module: module.name, entity: (p as unknown as { targetEntitySchema: { target: unknown } }).targetEntitySchema.target }))),
    );
    const owners = ENTITIES.map((entity) => [entity.name, registrations.filter((r) => r.entity === entity).map((r) => r.module)]);
    expect(owners.filter(([, modules]) => modules.length !== 1)).toEqual([]);
    expect(registrations.filter((r) => !(ENTITIES as unknown[]).includes(r.entity))).toEqual([]);
  });
});
