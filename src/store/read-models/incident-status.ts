import { INCIDENT_OVERLAYS, type IncidentOverlay, type IncidentStatus, type SdkIncidentStatus } from "@agent-oncall/telemetry/contract";
import { incidents } from "../schema";
import { names } from "../sql-names";

/**
 * An incident's status as the console shows it, derived from two stored facts: `status` (the SDK's own last
 * word, never rewritten) and the closed-by overlay (what closed it from outside the SDK: an operator's force
 * idle, or reconciliation finding the agent no longer recovering it). The overlay applies only while the SDK's
 * last word is `open` and the overlay is newer than that word; a closed incident (recovered, exhausted, failed,
 * skipped) always shows what the SDK said, and a recovery the SDK resumes after the overlay shows open again.
 * "Newer" is the merge's own order (time, then event id), so the result does not depend on arrival order.
 *
 * Costs: `status = 'open'` rows stay in the incidents_status index under 'open' when an overlay closes them, so
 * the open list, the open count and the force_idled / ended_unreported lists scan that range and test the
 * overlay per row (a bounded scan, SCAN_BUDGET); every other status is one index range as before.
 */

const I = names(incidents);

/** The statuses only the overlay gives (the SDK's word under them is `open`): declared in src/telemetry/sdk-states.ts. */
export const OVERLAY_STATUSES = INCIDENT_OVERLAYS;
export type OverlayStatus = IncidentOverlay;

/** The SDK's word under which the overlay may apply (the only status SQL here names). */
const OPEN = "open" satisfies SdkIncidentStatus;

export const isOverlayStatus = (s: string): s is OverlayStatus => (OVERLAY_STATUSES as readonly string[]).includes(s);

/** SQL, true when the overlay decides the shown status. `t` prefixes the columns (a table alias), or not. */
export function overlayAppliesSql(t?: string): string {
  const c = (col: string) => (t ? `${t}.${col}` : col);
  return `(${c(I.status)} = '${OPEN}' AND ${c(I.closedBy)} IS NOT NULL AND (${c(I.closedByAt)} > ${c(I.statusAt)} OR (${c(I.closedByAt)} = ${c(I.statusAt)} AND ${c(I.closedByEventId)} > ${c(I.statusEventId)})))`;
}

/** SQL for the shown status (see the module comment). */
export function shownStatusSql(t?: string): string {
  const c = (col: string) => (t ? `${t}.${col}` : col);
  return `(CASE WHEN ${overlayAppliesSql(t)} THEN ${c(I.closedBy)} ELSE ${c(I.status)} END)`;
}

/** SQL, true for an incident open now: the SDK's word is open and no newer overlay closed it. */
export function openNowSql(t?: string): string {
  const c = (col: string) => (t ? `${t}.${col}` : col);
  return `(${c(I.status)} = '${OPEN}' AND NOT ${overlayAppliesSql(t)})`;
}

/** The stored facts the shown status is derived from. */
export type IncidentStatusFacts = {
  /** The SDK's word as stored (a word a newer ingest wrote is passed through as is). */
  status: SdkIncidentStatus;
  statusAt: number;
  statusEventId: string;
  closedBy: IncidentOverlay | null;
  closedByAt: number | null;
  closedByEventId: string | null;
};

/** The same derivation in JS, for a row already read (keep in step with overlayAppliesSql). */
export function overlayApplies(r: IncidentStatusFacts): boolean {
  if (r.status !== OPEN || r.closedBy === null || r.closedByAt === null) return false;
  return r.closedByAt > r.statusAt || (r.closedByAt === r.statusAt && (r.closedByEventId ?? "") > r.statusEventId);
}

/** The shown status of a row already read. An unknown stored word is passed through (the page shows it as is). */
export function shownStatus(r: IncidentStatusFacts): IncidentStatus {
  return overlayApplies(r) ? r.closedBy! : r.status;
}
