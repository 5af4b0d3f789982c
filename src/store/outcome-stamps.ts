/**
 * The stamps a run's outcome may carry below any dated report (merge.ts compares the outcome group's stamp, the
 * newest wins). Events and reconciliation's `ended` findings are stamped with when the end happened; these two
 * rank below every such date, so whatever is reported with a date supersedes them, whenever it arrives.
 */

/** Reconciliation's guesses (ended_unreported, unknown) and an action's own word the SDK's report supersedes. */
export const FALLBACK_STAMP = 0;

/**
 * An end the SDK's event reported but could not say whole (the tail path, where nothing read the SDK's record after
 * the event): a managed fiber's `fiber:run:failed` reads the same for a failure and a cancellation, and
 * `task:failed` names only its error's class. It outranks a fallback, and the agent's record (reconciliation's
 * `ended`, dated when the SDK settled the run) supersedes it; reconciliation asks again about a run stamped so.
 */
export const UNCONFIRMED_STAMP = 1;
