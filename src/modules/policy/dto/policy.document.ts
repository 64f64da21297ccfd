import { sha256Hex, sha256Tagged } from 'src/common/crypto/crypto';
import { formatTimeRequired } from 'src/common/time/time';
import { Diagnostic } from 'src/modules/policy/diagnostics';
import { Publication, toPublication } from 'src/modules/publication/publication.service';

/** The policy every workspace has until a draft is stored; it compiles cleanly against the gateway schema. */
export const DEFAULT_POLICY = `// Default policy: every key and agent of this workspace may list and call its tools and invoke
// its models. Key allow-lists, budgets, rate limits and approval rules still apply at the gateway.
permit (
  principal,
  action in [Gateway::Action::"tool.list", Gateway::Action::"tool.call", Gateway::Action::"llm.invoke"],
  resource
);
`;

/** The stable id reported for a workspace with no stored policy: `pol_default_` plus 24 hex derived from the workspace id. */
export function defaultPolicyId(workspaceId: string): string {
  return `pol_default_${sha256Hex(`policy:${workspaceId}`).slice(0, 24)}`;
}

export const draftHash = (source: string) => sha256Tagged(source);

/** What a read of the policy sees: the stored row (or the default), its current revision and the publication counters. */
export interface PolicyState {
  workspaceId: string;
  /** False while the workspace has no stored policy (the default is reported). */
  stored: boolean;
  policyId: string;
  cedarText: string;
  draftHash: string;
  draftUpdatedAt: Date;
  currentRevisionId: string | null;
  publishedAt: Date | null;
  publishedHash: string | null;
  /** The draft is byte-equal to the source of a published revision. */
  draftPublished: boolean;
  snapshotVersion: number;
  publishedVersion: number;
}

export type ValidationState = 'not_run' | 'valid' | 'invalid';

export interface PolicyDocument {
  schema_version: 1;
  policy_id: string;
  workspace_id: string;
  cedar_text: string;
  draft_hash: string;
  draft_updated_at: string;
  validation_state: ValidationState;
  diagnostics: Diagnostic[];
  publication: Publication;
  current_revision_id?: string;
  published_at?: string;
  published_hash?: string;
}

/** The policy document; a plain read reports `valid` only for a draft that was published, else `not_run`. */
export function toPolicyDocument(state: PolicyState, compiled?: { valid: boolean; diagnostics: Diagnostic[] }): PolicyDocument {
  const doc: PolicyDocument = {
    schema_version: 1,
    policy_id: state.policyId,
    workspace_id: state.workspaceId,
    cedar_text: state.cedarText,
    draft_hash: state.draftHash,
    draft_updated_at: formatTimeRequired(state.draftUpdatedAt),
    validation_state: compiled ? (compiled.valid ? 'valid' : 'invalid') : state.draftPublished ? 'valid' : 'not_run',
    diagnostics: compiled?.diagnostics ?? [],
    publication: toPublication(state.snapshotVersion, state.publishedVersion),
  };
  if (state.currentRevisionId && state.publishedAt && state.publishedHash) {
    doc.current_revision_id = state.currentRevisionId;
    doc.published_at = formatTimeRequired(state.publishedAt);
    doc.published_hash = state.publishedHash;
  }
  return doc;
}
