import 'reflect-metadata';
import { RequestMethod, Type } from '@nestjs/common';
import { METHOD_METADATA, MODULE_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DOMAIN_MODULES } from 'src/app.module';
import { Access, ACCESS_KEY } from 'src/platform/access/decorators';
import { routeTemplate } from 'src/common/http/route-template';

function controllersOf(modules: Type[]): Type[] {
  return modules.flatMap((m) => (Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, m) as Type[] | undefined) ?? []);
}

/** Every route with the access it declares, e.g. `POST /api/v1/workspaces/:ws/keys -> workspace:key.manage`. */
function routeTable(): string[] {
  const rows: string[] = [];
  for (const controller of controllersOf(DOMAIN_MODULES as Type[])) {
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const handler = controller.prototype[name];
      if (name === 'constructor' || typeof handler !== 'function' || Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
      const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number];
      const path = routeTemplate(controller, handler);
      const access = (Reflect.getMetadata(ACCESS_KEY, handler) ?? Reflect.getMetadata(ACCESS_KEY, controller)) as Access | undefined;
      const declared = !access ? 'UNDECLARED' : access.kind === 'workspace' ? `workspace:${access.action}` : access.kind;
      rows.push(`${method} ${path} -> ${declared}`);
    }
  }
  return rows.sort();
}

describe('route access declarations', () => {
  it('every handler declares how it is reached (deny by default)', () => {
    const table = routeTable();
    expect(table.length).toBeGreaterThan(5);
    expect(table.filter((row) => row.endsWith('UNDECLARED'))).toEqual([]);
  });

  it('operator routes need a session, /internal routes a service token, and only health, the signing keys, the dev issuer and the OAuth callback are public', () => {
    for (const row of routeTable()) {
      const [, path, , declared] = row.split(' ');
      if (path.startsWith('/api/v1/workspaces/:ws')) expect(declared).toMatch(/^workspace:/);
      else if (path.startsWith('/api/v1/')) expect(declared).toMatch(/^(session|workspace:)/);
      else if (path.startsWith('/internal/')) expect(declared).toBe('internal');
      else expect(['/healthz', '/readyz', '/.well-known/control-signing-keys.json', '/.well-known/control-signing-keys-retired.json', '/dev-identity/.well-known/jwks.json', '/oauth/callback']).toContain(path);
    }
  });

  it('matches the reviewed route-to-access table', () => {
    expect(routeTable()).toMatchSnapshot();
  });
});
