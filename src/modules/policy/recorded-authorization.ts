import { isJsonObject } from 'src/common/json/json';
import { AuthorizationRequest } from 'src/modules/policy/policy.compiler';
import { PolicyStatement } from 'src/modules/policy/policy-source';

/** `envelope.authorization` of a receipt revision (CONTRACT.md 4.4) once its shape is checked. */
export interface RecordedAuthorization extends AuthorizationRequest {
  decision: 'allow' | 'deny';
}

const isUid = (v: unknown): v is { type: string; id: string } => isJsonObject(v) && typeof v.type === 'string' && typeof v.id === 'string';

/** The recorded request, or null when it is not one (counted as not replayable, never guessed). */
export function recordedAuthorization(value: unknown): RecordedAuthorization | null {
  if (!isJsonObject(value)) return null;
  const { principal, action, resource, context, entities, decision } = value;
  if (!isUid(principal) || !isUid(action) || !isUid(resource) || !isJsonObject(context) || !Array.isArray(entities)) return null;
  if (decision !== 'allow' && decision !== 'deny') return null;
  return { principal, action, resource, context, entities, decision };
}

/** Cedar's positional ids (`policy3`) to the ids the operator wrote (`@id`) or the positional one. */
export function policyIds(statements: PolicyStatement[]): Map<string, PolicyStatement> {
  return new Map(statements.map((s) => [s.cedarId, s]));
}
