import passport from 'passport';

let registered = 0;

/**
 * Registers `strategy` under a name of its own and returns it. Passport's registry is
 * process-wide, and one process may hold several applications (the e2e suites do), each with its
 * own issuer and secrets; a fixed name would let the last one built answer for all of them.
 */
export function registerStrategy(kind: string, strategy: passport.Strategy): string {
  const name = `${kind}#${++registered}`;
  passport.use(name, strategy);
  return name;
}

export function unregisterStrategy(name: string): void {
  passport.unuse(name);
}
