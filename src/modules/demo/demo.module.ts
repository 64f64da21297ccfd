import { Module } from '@nestjs/common';
import { DemoSeeder } from 'src/modules/demo/demo.seeder';

/** Demo data for newcomers (`npm run cli -- demo:seed`); no routes. */
@Module({ providers: [DemoSeeder], exports: [DemoSeeder] })
export class DemoModule {}
