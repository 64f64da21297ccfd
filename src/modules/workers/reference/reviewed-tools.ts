/**
 * A reviewed tool description, the unit permission presets are compiled from. Verified capabilities
 * come from the catalog's reviewed connector tools (see PresetsService); the computer-use actions
 * of each environment class are reviewed here, since the connector catalog has none.
 */
export interface ReviewedTool {
  capability_class: 'verified_capability' | 'computer_use_action';
  /** Null for a connector capability usable from any environment. */
  environment_class: string | null;
  action: string;
  connector: string | null;
  description: string;
  effect_kind: 'read' | 'create' | 'update' | 'delete' | 'external_side_effect';
  semantic_guarantee: 'read_only' | 'reversible' | 'irreversible';
  high_impact: boolean;
  allowed_domains: string[];
  /** The reviewed sentence saying what the tool does; lands in a preset's `allows` or `forbids`. */
  statement: string;
  /** The capability the tool serves (`cap.` id) or, for a UI action, the action itself. */
  capability_hint: string;
}

export const COMPUTER_USE_ACTIONS: readonly ReviewedTool[] = [
  {
    capability_class: 'computer_use_action', environment_class: 'browser', action: 'browser.navigate', connector: null,
    description: 'Open a page on an allowed domain.', effect_kind: 'read', semantic_guarantee: 'read_only', high_impact: false,
    allowed_domains: [], capability_hint: 'browser.navigate', statement: 'Open pages on allowed domains.',
  },
  {
    capability_class: 'computer_use_action', environment_class: 'browser', action: 'browser.fill_form', connector: null,
    description: 'Type into form fields without submitting.', effect_kind: 'update', semantic_guarantee: 'reversible', high_impact: false,
    allowed_domains: [], capability_hint: 'browser.fill_form', statement: 'Fill form fields.',
  },
  {
    capability_class: 'computer_use_action', environment_class: 'browser', action: 'browser.submit_form', connector: null,
    description: 'Submit a form.', effect_kind: 'external_side_effect', semantic_guarantee: 'irreversible', high_impact: true,
    allowed_domains: [], capability_hint: 'browser.submit_form', statement: 'Submit forms.',
  },
  {
    capability_class: 'computer_use_action', environment_class: 'desktop', action: 'desktop.read_screen', connector: null,
    description: 'Read what the virtual desktop shows.', effect_kind: 'read', semantic_guarantee: 'read_only', high_impact: false,
    allowed_domains: [], capability_hint: 'desktop.read_screen', statement: 'Read the screen.',
  },
  {
    capability_class: 'computer_use_action', environment_class: 'desktop', action: 'desktop.click', connector: null,
    description: 'Click and type in desktop applications.', effect_kind: 'external_side_effect', semantic_guarantee: 'irreversible', high_impact: true,
    allowed_domains: [], capability_hint: 'desktop.click', statement: 'Click and type in applications.',
  },
];
