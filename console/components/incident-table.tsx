import type { IncidentRow } from "../../src/store/read-models";
import { count } from "../format";
import { agentHref, detailHref } from "../links";
import { incidentStatusLabel } from "../words";
import { ColumnTable, columnIds, columnSet } from "./columns";
import { Status } from "./status";
import { Ago } from "./time";

/** The SDK's own attempt counter, "2 / 5"; fiber recovery reports none ("—"). */
export function reportedAttempts(i: Pick<IncidentRow, "kind" | "attempts" | "maxAttempts">): string {
  if (i.kind === "fiber" && i.attempts === 0) return "—";
  return `${count(i.attempts)}${i.maxAttempts ? ` / ${count(i.maxAttempts)}` : ""}`;
}

const respent = (i: IncidentRow) => i.respentInputTokens + i.respentOutputTokens;

/**
 * The incidents list's columns: the incident itself (always shown: it is the link), then those `cols=` on
 * /incidents picks (console/pages/incidents.tsx has the chooser); none picked shows all.
 */
export const INCIDENT_COLUMN_SET = columnSet<IncidentRow, { now: number }>(
  "incidents",
  {
    id: "incident",
    header: "incident",
    fields: ["incidentId", "agentClass", "agentName"],
    cell: (i) => (
      <a class="mono" href={detailHref("incidents", i.incidentId, i)}>
        {i.incidentId}
      </a>
    ),
  },
  [
    { id: "kind", header: "kind", fields: ["kind"], cell: (i) => i.kind },
    {
      id: "agent",
      header: "agent",
      fields: ["agentClass", "agentName"],
      cell: (i) => (
        <a href={agentHref(i)}>
          {i.agentClass} · {i.agentName}
        </a>
      ),
    },
    { id: "status", header: "status", fields: ["status"], cell: (i) => <Status value={i.status} label={incidentStatusLabel(i)} /> },
    { id: "attempts", header: "attempts", num: true, fields: ["attempts", "maxAttempts"], cell: (i) => reportedAttempts(i) },
    {
      id: "tokens",
      header: "tokens",
      title: "model tokens its recovery re-spent",
      num: true,
      fields: ["respentInputTokens", "respentOutputTokens"],
      attrs: (i) => ({ "data-testid": "incident-tokens", "data-tokens": String(respent(i)) }),
      cell: (i) => (respent(i) ? count(respent(i)) : "—"),
    },
    { id: "reason", header: "reason", fields: ["reason"], cell: (i) => i.reason ?? "" },
    { id: "firstSeen", header: "first seen", fields: ["firstSeen"], cell: (i, x) => <Ago t={i.firstSeen} now={x.now} /> },
    { id: "lastSeen", header: "last seen", fields: ["lastSeen"], cell: (i, x) => <Ago t={i.lastSeen} now={x.now} /> },
  ],
);

/** The ids `cols=` may name on the incidents list. */
export const INCIDENT_COLUMNS = columnIds(INCIDENT_COLUMN_SET);

/** Incidents as a table: the overview's worst list and the incidents page share it. `cols` limits the columns shown. */
export function IncidentTable(props: {
  rows: IncidentRow[];
  now: number;
  testId: string;
  showFirstSeen?: boolean;
  cols?: readonly string[];
  /** The page's main list (j / k walk it): /incidents, not the overview's worst few. */
  mainList?: boolean;
}) {
  return (
    <ColumnTable
      set={INCIDENT_COLUMN_SET}
      rows={props.rows}
      x={{ now: props.now }}
      testId={props.testId}
      cols={props.cols}
      hide={props.showFirstSeen ? [] : ["firstSeen"]}
      mainList={props.mainList}
    />
  );
}
