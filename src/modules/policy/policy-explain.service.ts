import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { bodyError, notFound } from 'src/common/http/errors';
import { SourcePositions } from 'src/modules/policy/diagnostics';
import { ExplainPolicyDto } from 'src/modules/policy/dto/policy.dto';
import { AuthorizationRequest, Evaluation, pagesOf } from 'src/modules/policy/policy.compiler';
import { splitPolicies } from 'src/modules/policy/policy-source';
import { draftSide, PolicySide, PolicySides } from 'src/modules/policy/policy-sides';
import { PolicyService } from 'src/modules/policy/policy.service';
import { policyIds, recordedAuthorization } from 'src/modules/policy/recorded-authorization';
import { ReceiptReadsRepository } from 'src/modules/receipts/receipt-reads.repository';
import { RECEIPT_NOT_FOUND } from 'src/modules/receipts/receipts.service';

/** Explains one decision (a recorded one, by receipt, or one spelled out) against the draft or the published policy; only reads. */
@Injectable()
export class PolicyExplainService {
  constructor(
    private readonly policy: PolicyService,
    private readonly sides: PolicySides,
    private readonly receipts: ReceiptReadsRepository,
  ) {}

  async explain(ws: WorkspaceContext, body: ExplainPolicyDto) {
    const request = body.receipt_id !== undefined ? await this.receiptRequest(ws.id, body) : explicitRequest(body);
    let side: PolicySide;
    if (body.against === 'draft') {
      // The draft may not compile (422, as publish answers); a published revision compiled when it was published.
      const state = await this.policy.readState(undefined, ws);
      await this.policy.requireCompiled(state);
      side = draftSide(state);
    } else {
      side = await this.sides.side(ws, 'published');
    }
    let result!: Evaluation;
    await this.policy.evaluate(ws, side.draft_hash, side.cedarText, pagesOf([request]), ([answer]) => (result = answer));
    if ('refused' in result) throw bodyError([], 'the authorization request could not be evaluated');
    const ids = policyIds(splitPolicies(side.cedarText));
    const positions = new SourcePositions(side.cedarText);
    return {
      against: body.against,
      revision_id: side.revision_id,
      draft_hash: side.draft_hash,
      decision: result.decision,
      determining_policies: result.reasons.map((cedarId) => {
        const statement = ids.get(cedarId);
        return { id: statement?.id ?? cedarId, line: statement?.line ?? null, column: statement?.column ?? null };
      }),
      errors: result.errors.map((e) => ({
        policy_id: ids.get(e.policy)?.id ?? e.policy,
        message: e.message,
        ...(e.at !== null ? positions.at(e.at) : { line: null, column: null }),
      })),
    };
  }

  /** The request recorded on a receipt of this workspace (any of its revisions, by receipt id). */
  private async receiptRequest(workspaceId: string, body: ExplainPolicyDto): Promise<AuthorizationRequest> {
    if (body.principal || body.action || body.resource || body.context || body.entities) {
      throw bodyError(['receipt_id'], 'provide either receipt_id or a request, not both');
    }
    const row = await this.receipts.authorizationOf(workspaceId, body.receipt_id!);
    if (!row) throw notFound(RECEIPT_NOT_FOUND);
    const auth = recordedAuthorization(row.authorization);
    if (!auth) throw bodyError(['receipt_id'], 'receipt carries no authorization request');
    return auth;
  }
}

/** The request spelled out in the body: principal, action, resource and context are all needed. */
function explicitRequest(body: ExplainPolicyDto): AuthorizationRequest {
  for (const field of ['principal', 'action', 'resource', 'context'] as const) {
    if (body[field] === undefined) throw bodyError([field], 'field required', 'missing');
  }
  return { principal: body.principal!, action: body.action!, resource: body.resource!, context: body.context!, entities: body.entities ?? [] };
}
