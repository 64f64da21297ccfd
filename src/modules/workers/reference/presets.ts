import { canonicalJson, sha256Hex } from 'src/common/crypto/crypto';
import { ReviewedTool } from 'src/modules/workers/reference/reviewed-tools';
import { DEFAULT_PRESET, PresetName, PRESET_NAMES } from 'src/modules/workers/workers.data';

const DESCRIPTIONS: Record<PresetName, { display_name: string; summary: string }> = {
  read_only: { display_name: 'Read only', summary: 'Reads through verified capabilities and looks at screens; changes nothing.' },
  safe_writes: { display_name: 'Safe writes', summary: 'Reads, plus verified writes that can be undone; nothing irreversible or high-impact.' },
  custom: { display_name: 'Custom', summary: 'Grants nothing until an operator lists capabilities; everything unlisted is denied.' },
};

/** Whether `preset` grants `tool`; `custom` grants nothing by itself. */
function grants(preset: PresetName, tool: ReviewedTool): boolean {
  switch (preset) {
    case 'read_only':
      return tool.semantic_guarantee === 'read_only';
    case 'safe_writes':
      return tool.semantic_guarantee !== 'irreversible' && !tool.high_impact;
    case 'custom':
      return false;
  }
}

const compiledEntry = (tool: ReviewedTool) => ({
  capability_class: tool.capability_class,
  environment_class: tool.environment_class,
  action: tool.action,
  description: tool.description,
  semantic_guarantee: tool.semantic_guarantee,
  high_impact: tool.high_impact,
  allowed_domains: tool.allowed_domains,
});

/**
 * The preset compiled from the reviewed tool descriptions: granted tools in `allows` and
 * `compiled_capabilities.allowed`, every other reviewed tool in `forbids` and `forbidden` (the
 * `custom` preset lists none), and anything unlisted denied.
 */
export function compilePreset(preset: PresetName, tools: readonly ReviewedTool[]) {
  const allowed = tools.filter((t) => grants(preset, t));
  const forbidden = preset === 'custom' ? [] : tools.filter((t) => !grants(preset, t));
  const compiled = { allowed: allowed.map(compiledEntry), forbidden: forbidden.map(compiledEntry) };
  return {
    preset,
    ...DESCRIPTIONS[preset],
    default_for_new_workers: preset === DEFAULT_PRESET,
    allows: allowed.map((t) => ({ statement: t.statement, capability_hint: t.capability_hint })),
    forbids: forbidden.map((t) => ({ statement: t.statement, capability_hint: t.capability_hint })),
    compiled_capabilities: compiled,
    unlisted_capability_default: 'denied' as const,
    cedar_policy_ids: allowed.map((t) => `workers.${preset}.permit.${t.action}`),
    /** Names this exact compilation: it changes whenever the reviewed descriptions change. */
    policy_revision_id: `ppr_${sha256Hex(canonicalJson({ preset, compiled })).slice(0, 24)}`,
  };
}

export type CompiledPreset = ReturnType<typeof compilePreset>;

export const compileAllPresets = (tools: readonly ReviewedTool[]) => PRESET_NAMES.map((p) => compilePreset(p, tools));

/** What a Worker revision on `preset` may use in its environment classes: capability actions and UI actions. */
export function grantsFor(preset: CompiledPreset, classes: readonly string[]) {
  const usable = preset.compiled_capabilities.allowed.filter((c) => c.environment_class === null || classes.includes(c.environment_class));
  return {
    allowed_capabilities: usable.filter((c) => c.capability_class === 'verified_capability').map((c) => c.action),
    ui_actions: usable.filter((c) => c.capability_class === 'computer_use_action').map((c) => c.action),
  };
}
