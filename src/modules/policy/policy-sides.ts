import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { notFound } from 'src/common/http/errors';
import { DEFAULT_POLICY, draftHash, PolicyState } from 'src/modules/policy/dto/policy.document';
import { PoliciesRepository } from 'src/modules/policy/policies.repository';
import { PolicyService } from 'src/modules/policy/policy.service';

const REVISION_NOT_FOUND = 'policy revision not found';

/** A policy source to evaluate or compare: where it came from and its text. */
export interface PolicySide {
  ref: string;
  revision_id: string | null;
  draft_hash: string;
  cedarText: string;
}

export const draftSide = (state: PolicyState): PolicySide => ({ ref: 'draft', revision_id: null, draft_hash: state.draftHash, cedarText: state.cedarText });

/** Resolves the policy sources explain and diff name: `draft`, `published` or a revision id. */
@Injectable()
export class PolicySides {
  constructor(
    private readonly policy: PolicyService,
    private readonly policies: PoliciesRepository,
  ) {}

  /** The source `ref` names: the stored draft, the published revision (the default policy when none), or a revision of this workspace. */
  async side(ws: WorkspaceContext, ref: string): Promise<PolicySide> {
    if (ref === 'draft') return draftSide(await this.policy.readState(undefined, ws));
    if (ref === 'published') {
      const row = await this.policy.currentRevision(ws.id);
      if (row) return { ref, revision_id: row.id, draft_hash: row.draft_hash, cedarText: row.cedar_text };
      return { ref, revision_id: null, draft_hash: draftHash(DEFAULT_POLICY), cedarText: DEFAULT_POLICY };
    }
    const revision = await this.policies.revision(ws.id, ref);
    if (revision) return { ref, revision_id: revision.id, draft_hash: revision.draftHash, cedarText: revision.cedarText };
    throw notFound(REVISION_NOT_FOUND);
  }
}
