import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { splitPolicies } from 'src/modules/policy/policy-source';
import { PolicySide, PolicySides } from 'src/modules/policy/policy-sides';
import { diffBudget, unifiedDiff } from 'src/modules/policy/text-diff';

/** Diffs two policy sources (draft, published or a revision) statement by statement; only reads (no audit row). */
@Injectable()
export class PolicyDiffService {
  constructor(private readonly sides: PolicySides) {}

  async diff(ws: WorkspaceContext, from: string, to: string) {
    const [before, after] = await Promise.all([this.sides.side(ws, from), this.sides.side(ws, to)]);
    const old = new Map(splitPolicies(before.cedarText).map((s) => [s.id, s]));
    const added: { id: string; text: string }[] = [];
    const changed: { id: string; diff: string }[] = [];
    let unchanged = 0;
    const budget = diffBudget();
    for (const statement of splitPolicies(after.cedarText)) {
      const previous = old.get(statement.id);
      old.delete(statement.id);
      if (!previous) added.push({ id: statement.id, text: statement.text });
      else if (previous.text === statement.text) unchanged++;
      else changed.push({ id: statement.id, diff: unifiedDiff(previous.text, statement.text, budget) });
    }
    const removed = [...old.values()].map((s) => ({ id: s.id, text: s.text }));
    const describe = (s: PolicySide) => ({ ref: s.ref, revision_id: s.revision_id, draft_hash: s.draft_hash });
    return { from: describe(before), to: describe(after), added, removed, changed, unchanged };
  }
}
