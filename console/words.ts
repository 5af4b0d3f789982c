import type { IncidentRow } from "../src/store/read-models";

/**
 * Sentences for operators, keyed by the typed codes and facts the store and the packages return. The store says
 * what is true (a status, a reason or its absence); the console says it in words.
 */

/** The incident status as the console labels it: a failure the SDK gave no reason for says so. */
export function incidentStatusLabel(i: Pick<IncidentRow, "status" | "reason">): string {
  return i.status === "failed" && !i.reason ? "failed (no reason given)" : i.status;
}
