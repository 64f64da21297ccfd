import { celEnv, parse, plan } from '@bufbuild/cel';

/** The variables a step condition may read: the run input and the outputs of earlier steps. */
export const CONDITION_VARIABLES = ['input', 'steps'] as const;

const env = celEnv();

interface Node {
  exprKind: { case: string | undefined; value?: unknown };
}

/** Names the first problem of an expression tree: an unknown variable or function. */
function problem(node: Node | undefined, scope: ReadonlySet<string>): string | null {
  if (!node) return null;
  const kind = node.exprKind;
  switch (kind.case) {
    case 'identExpr': {
      const { name } = kind.value as { name: string };
      return scope.has(name) ? null : `unknown variable ${name}; use ${CONDITION_VARIABLES.join(' or ')}`;
    }
    case 'selectExpr':
      return problem((kind.value as { operand: Node }).operand, scope);
    case 'callExpr': {
      const call = kind.value as { function: string; target?: Node; args: Node[] };
      // operators (`_&&_`, `_[_]`) and internal macros (`@not_strictly_false`) are the planner's own
      if (!/^[_@]/.test(call.function) && !env.funcs.find(call.function)) return `unknown function ${call.function}`;
      for (const child of [call.target, ...call.args]) {
        const found = problem(child, scope);
        if (found) return found;
      }
      return null;
    }
    case 'listExpr':
      for (const child of (kind.value as { elements: Node[] }).elements) {
        const found = problem(child, scope);
        if (found) return found;
      }
      return null;
    case 'structExpr':
      for (const entry of (kind.value as { entries: { keyKind: { case: string; value: unknown }; value: Node }[] }).entries) {
        const found = (entry.keyKind.case === 'mapKey' ? problem(entry.keyKind.value as Node, scope) : null) ?? problem(entry.value, scope);
        if (found) return found;
      }
      return null;
    case 'comprehensionExpr': {
      const c = kind.value as { iterVar: string; iterVar2: string; accuVar: string; iterRange: Node; accuInit: Node; loopCondition: Node; loopStep: Node; result: Node };
      const inner = new Set([...scope, c.iterVar, c.iterVar2, c.accuVar].filter(Boolean));
      return problem(c.iterRange, scope) ?? problem(c.accuInit, scope) ?? problem(c.loopCondition, inner) ?? problem(c.loopStep, inner) ?? problem(c.result, inner);
    }
    default:
      return null;
  }
}

/**
 * Compiles a step `condition`, written in CEL (the Common Expression Language, cel.dev), over the
 * variables `input` and `steps`. Returns null when it compiles, else the reason it does not.
 */
export function compileCondition(text: string): string | null {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(text);
    plan(env, parsed);
  } catch (error) {
    return `condition does not parse: ${(error instanceof Error ? error.message : 'syntax error').split('\n')[0]}`;
  }
  return problem(parsed.expr as unknown as Node, new Set(CONDITION_VARIABLES));
}
