// autocannon ships no types; the bench uses a handful of its result fields.
declare module 'autocannon';
