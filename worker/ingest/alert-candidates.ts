import { isAlertCandidate, type TelemetryEvent } from "@agent-oncall/telemetry";
import { incidentHref, listHref, sessionHref } from "../../console/links";
import type { SubjectKey } from "../../src/store/alerts";
import { exhaustedIncidentsIn, openAmbiguousOpsIn } from "../../src/store/alerts";
import type { Store } from "../../src/store/partitions";
import type { Alert } from "../jobs";
import { toRows } from "./rows";

/**
 * Alerts an ingested batch calls for: incidents it turned exhausted, and ops it reported ambiguous. The
 * candidates come from the same event → projection mapping ingest uses (rows.ts), so "exhausted" means
 * exactly what the incident pages show; the stored projection then decides (a later event may already
 * have moved the incident on, or the op may be resolved); each is read in its agent's partition. Dedup is the
 * delivery log's key, not ours.
 */
export async function alertsFromEvents(store: Store, events: TelemetryEvent[]): Promise<Alert[]> {
  // Candidates by the registry: events that move the incident they name, or can make the op they name ambiguous.
  const relevant = events.filter(isAlertCandidate);
  if (!relevant.length) return [];
  const { projections } = toRows(relevant, Date.now());
  const incidentKeys = uniq(projections.incidents.filter((r) => r.status === "exhausted").map((r) => key(r.incident_id, r.agent_class, r.agent_name)));
  const opKeys = uniq(projections.ops.filter((r) => r.ambiguous_at !== null).map((r) => key(r.op_id, r.agent_class, r.agent_name)));
  const [incidents, ops] = await Promise.all([exhaustedIncidentsIn(store, incidentKeys), openAmbiguousOpsIn(store, opKeys)]);
  return [
    ...incidents.map(
      (i): Alert => ({
        key: JSON.stringify(["exhausted", i.agentClass, i.agentName, i.incidentId]),
        kind: "exhausted",
        agentClass: i.agentClass,
        agentName: i.agentName,
        subjectId: i.incidentId,
        title: "Recovery exhausted",
        summary: `${i.kind} incident ${i.incidentId} gave up after ${i.attempts}${i.maxAttempts ? ` of ${i.maxAttempts}` : ""} attempts: ${i.reason ?? "no reason given"}`,
        path: incidentHref(i.incidentId, i),
        at: i.statusAt,
        details: { incidentId: i.incidentId, incidentKind: i.kind, reason: i.reason, attempts: i.attempts, maxAttempts: i.maxAttempts },
      }),
    ),
    ...ops.map(
      (o): Alert => ({
        key: JSON.stringify(["ambiguous_op", o.agentClass, o.agentName, o.opId]),
        kind: "ambiguous_op",
        agentClass: o.agentClass,
        agentName: o.agentName,
        subjectId: o.opId,
        title: "Operation may have run twice",
        summary: `op ${o.opId}${o.opKind ? ` (${o.opKind})` : ""} is ambiguous${o.detail ? `: ${o.detail}` : ""}`,
        path: o.sessionName ? sessionHref(o.sessionName, o) : listHref("ops", { open: "true" }),
        at: o.ambiguousAt ?? Date.now(),
        details: { opId: o.opId, opKind: o.opKind, sessionName: o.sessionName, detail: o.detail },
      }),
    ),
  ];
}

/** A projection row's key (rows.ts types row values loosely: they are SQL values). */
const key = (id: unknown, agentClass: unknown, agentName: unknown): SubjectKey => ({
  id: String(id ?? ""),
  agentClass: String(agentClass ?? ""),
  agentName: String(agentName ?? ""),
});

function uniq(keys: SubjectKey[]): SubjectKey[] {
  const seen = new Map(keys.map((k) => [JSON.stringify([k.id, k.agentClass, k.agentName]), k]));
  return [...seen.values()];
}
