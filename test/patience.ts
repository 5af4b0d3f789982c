/**
 * How much slower than a quiet machine the tests are written to tolerate. Waits, deadlines and timeouts are sized for
 * a quiet 2-core machine and multiplied by this: a load average of 10 on 2 cores (other work, four test runtimes at
 * once) must make the tests slower, not red. A wait polls for its condition and returns as soon as it holds, so the
 * allowance costs a quiet machine nothing; only a test that really hangs takes longer to fail.
 */
export const PATIENCE = 10;

/** `ms`, as measured on a quiet machine, with the allowance for a loaded one. */
export const patient = (ms: number): number => ms * PATIENCE;
