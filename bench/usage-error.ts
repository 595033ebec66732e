/** A mistake on a benchmark's command line: bench/run.ts prints it as one line and exits with code 2. */
export class UsageError extends Error {}
