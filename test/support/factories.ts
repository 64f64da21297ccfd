/**
 * States the suites need that no request produces in the time a test has (a key aged past its
 * expiry, receipts seeded in bulk, a workspace frozen by an operator): one named function each, so
 * that no suite writes to a table itself. A factory goes through the owning module's repository,
 * taken from the running application, whenever the repository can produce the state; a hand-written
 * statement remains only for a state that only a test wants (a row aged or corrupted on purpose).
 * Sections follow the modules, in the order they were added.
 */
