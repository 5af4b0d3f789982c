import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { foldRows } from "../merge";
import { derive, type RunWithSnapshot } from "../read-models/runs";
import { RUNS_SPEC, type RunRow, runRowOf, splitHealthyCompleted } from "../run-rows";
import { runs } from "../schema";
import { names } from "../sql-names";
import type { HistoryEvent } from "./layout";

/**
 * Runs folded from R2 history with ingest's own mapping: each event's runs row (run-rows.ts runRowOf), merged per run
 * by the runs spec (RUNS_SPEC, merge.ts foldRows), exactly as ingest folds a batch and D1 merges batches. A run
 * that completed healthily is not in D1 (ingest lets it leave): this is how the console shows it.
 */

/** The envelope a history record was written from (worker/ingest/history.ts historyEvent), as far as the record keeps it. */
export function telemetryEventOf(h: HistoryEvent): TelemetryEvent {
  const corr: Record<string, string> = {};
  for (const k of ["fiberId", "incidentId", "requestId", "opId", "sessionName", "taskId", "traceId", "spanId"] as const) {
    const v = h[k as keyof HistoryEvent];
    if (typeof v === "string" && v) corr[k] = v;
  }
  return {
    v: h.v,
    id: h.id,
    time: h.time,
    type: h.type,
    ...(h.seq !== null && h.seq !== undefined ? { seq: h.seq } : {}),
    source: { agentClass: h.agentClass, agentName: h.agentName },
    corr,
    payload: h.payload,
  } as TelemetryEvent;
}

const F = names(runs);

/** A folded runs row as the read models show it (the SQL defaults a new D1 row gets applied). */
function runOf(r: RunRow): RunWithSnapshot {
  const at = <K extends keyof typeof F>(k: K) => (r as Record<string, unknown>)[F[k] as string] ?? null;
  const stored: Omit<RunWithSnapshot, "runId" | "status" | "confirmed"> = {
    fiberId: String(r.fiber_id),
    kind: (r.kind ?? "fiber") as RunWithSnapshot["kind"],
    agentClass: String(r.agent_class),
    agentName: String(r.agent_name),
    name: r.name ?? "(unnamed)",
    definition: at("definition") as string | null,
    attempt: at("attempt") as number | null,
    startedAt: at("startedAt") as number | null,
    endedAt: at("endedAt") as number | null,
    outcome: at("outcome") as string | null,
    error: at("error") as string | null,
    reason: at("reason") as string | null,
    phase: at("phase") as string | null,
    wakeAt: at("wakeAt") as number | null,
    step: at("step") as string | null,
    statusMessage: at("statusMessage") as string | null,
    confirmedAt: at("confirmedAt") as number | null,
    snapshotBytes: at("snapshotBytes") as number | null,
    snapshotAt: at("snapshotAt") as number | null,
    snapshotPreview: at("snapshotPreview") as string | null,
    firstSeen: Number(r.first_seen),
    lastSeen: Number(r.last_seen ?? 0),
  };
  return derive(stored);
}

/**
 * Every run the events speak of, folded; `healthy`: only those that completed healthily (the ones ingest lets leave
 * D1, by the same rule: run-rows.ts splitHealthyCompleted), which a list adds to D1's runs without listing one twice.
 */
export function foldRuns(events: readonly HistoryEvent[], opts: { healthy?: boolean } = {}): RunWithSnapshot[] {
  return foldRunRows(events, opts).map(runOf);
}

/** foldRuns as runs rows (SQL column names), with the defaults a new D1 row gets: what D1 would hold. */
export function foldRunRows(events: readonly HistoryEvent[], opts: { healthy?: boolean } = {}): RunRow[] {
  const rows = events.map((h) => runRowOf(telemetryEventOf(h))).filter((r): r is RunRow => r !== null);
  const folded = foldRows(RUNS_SPEC, rows) as RunRow[];
  const kept = opts.healthy ? splitHealthyCompleted(rows, folded).leaving : folded;
  return kept.map((r) => ({ ...r, name: r.name ?? "(unnamed)", kind: r.kind ?? "fiber", last_seen: r.last_seen ?? 0, listed_at: r.listed_at ?? 0 }));
}
