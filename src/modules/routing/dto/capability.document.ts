import { Env } from 'src/platform/access/context';
import { CatalogCapability, EffectKind } from 'src/modules/catalog/catalog.schema';
import { CatalogBinding } from 'src/modules/catalog/catalog.service';

/** Evidence classes, weakest first; an unrecognized class ranks below all of them. */
export const EVIDENCE_RANKING = ['untrusted', 'broker_attested', 'connector_attested', 'vendor_signed', 'gateway_observed'] as const;

export function evidenceRank(value: string): number {
  return (EVIDENCE_RANKING as readonly string[]).indexOf(value);
}

/** Outside production always `untrusted`; in production by effect kind. */
export function evidenceFloor(env: Env, effect: EffectKind): string {
  if (env !== 'prod') return 'untrusted';
  if (effect === 'delete' || effect === 'external_side_effect') return 'gateway_observed';
  if (effect === 'create' || effect === 'update') return 'broker_attested';
  return 'untrusted';
}

/** A binding as this workspace sees it: `connected` when it holds an active connection reaching it. */
export interface WorkspaceBinding {
  binding: CatalogBinding;
  connected: boolean;
}

/** Active: not quarantined and backed by a connection the workspace holds. */
export const isActive = (b: WorkspaceBinding) => b.binding.status === 'active' && b.connected;

export function toCapabilityDocument(capability: CatalogCapability, env: Env, bindings: WorkspaceBinding[]) {
  const active = bindings.filter(isActive).length;
  return {
    capability_id: capability.capability_id,
    display_name: capability.display_name,
    description: capability.description,
    effect_kind: capability.effect_kind,
    destructive: capability.effect_kind !== 'read',
    evidence_floor: evidenceFloor(env, capability.effect_kind),
    status: active > 0 ? 'active' : 'declared',
    feature_vocabulary: capability.feature_vocabulary,
    catalog_bindings: bindings.length,
    active_bindings: active,
  };
}

export type CapabilityDocument = ReturnType<typeof toCapabilityDocument>;

export function toBindingDocument(capability: CapabilityDocument, { binding, connected }: WorkspaceBinding) {
  return {
    binding_id: binding.binding_id,
    capability_id: binding.capability_id,
    capability,
    tool: binding.tool,
    custody: binding.custody,
    surface: binding.surface,
    auth_modes: binding.auth_modes,
    catalog_source: binding.catalog_source,
    evidence_ceiling: binding.evidence_ceiling,
    meets_evidence_floor: evidenceRank(binding.evidence_ceiling) >= evidenceRank(capability.evidence_floor),
    cost: binding.cost,
    quality_prior_bps: binding.quality_prior_bps,
    connected,
    coverage: binding.coverage,
    shared_quota: binding.shared_quota,
    idempotency_propagation: binding.idempotency_propagation,
    status: binding.status,
  };
}
