import { CatalogSession } from 'src/modules/connections/entities/catalog-session.entity';
import { Connection } from 'src/modules/connections/entities/connection.entity';
import { OAuthState } from 'src/modules/connections/entities/oauth-state.entity';

/** The tables connections owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const CONNECTIONS_ENTITIES = [CatalogSession, Connection, OAuthState];
