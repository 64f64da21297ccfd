/** Allowed values of the receipt list projection (core spec section 2). */
export const INVOCATION_STATES = ['awaiting_approval', 'rate_limited', 'not_ready', 'denied', 'in_flight', 'completed', 'inconclusive'] as const;
export const DECISIONS = ['allow', 'deny', 'approval_required'] as const;
export const EVIDENCE_TRUST = ['gateway_observed', 'vendor_signed', 'connector_attested', 'broker_attested', 'untrusted'] as const;
export const VERIFICATION_STATES = ['not_required', 'pending', 'verified', 'contradicted', 'inconclusive'] as const;
export const DISPATCH_STATES = ['not_attempted', 'accepted', 'rejected', 'unknown'] as const;
export const VERIFICATION_METHODS = ['staged_plan', 'none', 'response_binding'] as const;
export const EFFECT_CLAIMS = ['accepted', 'persisted', 'delivered'] as const;
