import catalogFile from 'src/modules/catalog/data/catalog.v1.json';
import { CatalogSchemaError, validateCatalog } from 'src/modules/catalog/catalog.schema';
import { CatalogService } from 'src/modules/catalog/catalog.service';

const copy = () => JSON.parse(JSON.stringify(catalogFile));

describe('frozen catalog', () => {
  const catalog = validateCatalog(catalogFile);

  it('ships at least 40 connectors across the required categories and all three lanes', () => {
    expect(catalog.connectors.length).toBeGreaterThanOrEqual(40);
    const categories = new Set(catalog.connectors.flatMap((c) => c.categories));
    for (const c of ['source_hosting', 'chat', 'payments', 'issue_tracking', 'documents', 'crm', 'mail', 'calendar', 'storage', 'database', 'observability']) {
      expect(categories).toContain(c);
    }
    const both = catalog.connectors.filter((c) => c.sources.some((s) => s.provider === 'broker_a') && c.sources.some((s) => s.provider === 'broker_b'));
    expect(both.length).toBeGreaterThan(0);
    expect(catalog.connectors.some((c) => c.native_profile?.type === 'oauth2')).toBe(true);
    expect(catalog.connectors.some((c) => c.native_profile?.type === 'api_key')).toBe(true);
    expect(catalog.connectors.some((c) => c.default_tier === 'federated')).toBe(true);
  });

  it('gives every connector reviewed tool descriptions bound to capabilities', () => {
    const service = new CatalogService();
    expect(service.tools().length).toBeGreaterThanOrEqual(80);
    for (const tool of service.tools()) {
      expect(tool.name.split('.')[0]).toBe(tool.connector_slug);
      expect(service.capability(tool.capability_id)).toBeDefined();
    }
    const bindings = service.bindings('cap.issue.create');
    expect(bindings.map((b) => b.binding_id)).toContain('github.create_issue@native');
    expect(bindings.find((b) => b.binding_id === 'github.create_issue@broker_a')).toMatchObject({ custody: 'federated', catalog_source: 'broker_a', cost: { base_micros_usd: null, bundled_in_broker: true } });
  });

  it.each([
    ['an unknown field', (d: any) => (d.connectors[0].extra = 1), /connectors\[0\]\.extra: unknown field/],
    ['unsorted slugs', (d: any) => d.connectors.reverse(), /connectors: must be sorted by slug/],
    ['a duplicate slug', (d: any) => (d.connectors[1].slug = d.connectors[0].slug), /connectors/],
    ['an unknown lane', (d: any) => (d.connectors[0].sources[0].provider = 'broker_c'), /provider: must be one of/],
    ['lanes out of order', (d: any) => d.connectors.find((c: any) => c.sources.length > 1).sources.reverse(), /lanes must be unique and in the order/],
    ['a native source without profile', (d: any) => delete d.connectors.find((c: any) => c.native_profile).native_profile, /native_profile: required exactly when/],
    ['an http authorize URL', (d: any) => (d.connectors.find((c: any) => c.native_profile?.type === 'oauth2').native_profile.authorize_url = 'http://x.example/a'), /authorize_url: must be an https URL/],
    ['a tool on an unknown capability', (d: any) => (d.connectors[0].tools[0].capability_id = 'cap.nope'), /unknown capability/],
    ['a write tool on a read capability', (d: any) => (d.connectors[0].tools.find((t: any) => t.effect === 'read').effect = 'write'), /effect: must be read exactly when/],
    ['a tool outside its connector', (d: any) => (d.connectors[0].tools[0].name = 'other.tool'), /must be the connector slug/],
    ['a bad timestamp', (d: any) => (d.generated_at = 'yesterday'), /generated_at/],
  ])('refuses %s', (_, mutate, message) => {
    const data = copy();
    mutate(data);
    expect(() => validateCatalog(data)).toThrow(CatalogSchemaError);
    expect(() => validateCatalog(data)).toThrow(message);
  });
});
