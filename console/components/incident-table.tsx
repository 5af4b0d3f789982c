import type { IncidentRow } from "../../src/store/read-models";
import { agentHref, detailHref } from "../links";
import { incidentStatusLabel } from "../words";
import { Status } from "./status";
import { Ago } from "./time";

/** The SDK's own attempt counter, "2 / 5"; fiber recovery reports none ("—"). */
export function reportedAttempts(i: Pick<IncidentRow, "kind" | "attempts" | "maxAttempts">): string {
  if (i.kind === "fiber" && i.attempts === 0) return "—";
  return `${i.attempts}${i.maxAttempts ? ` / ${i.maxAttempts}` : ""}`;
}

/**
 * The columns an incidents list can show besides the incident itself (always shown: it is the link), in order.
 * `cols=` on /incidents picks some of them (console/pages/incidents.tsx has the chooser); none picked shows all.
 */
export const INCIDENT_COLUMNS = ["kind", "agent", "status", "attempts", "tokens", "reason", "firstSeen", "lastSeen"] as const;
export type IncidentColumn = (typeof INCIDENT_COLUMNS)[number];

/** Incidents as a table: the overview's worst list and the incidents page share it. `cols` limits the columns shown. */
export function IncidentTable(props: { rows: IncidentRow[]; now: number; testId: string; showFirstSeen?: boolean; cols?: readonly IncidentColumn[] }) {
  const picked = props.cols?.length ? new Set<IncidentColumn>(props.cols) : null;
  const show = (c: IncidentColumn) => (picked ? picked.has(c) : c !== "firstSeen" || Boolean(props.showFirstSeen));
  return (
    <table data-testid={props.testId} data-cols={picked ? INCIDENT_COLUMNS.filter(show).join(",") : undefined}>
      <thead>
        <tr>
          <th>incident</th>
          {show("kind") ? <th>kind</th> : null}
          {show("agent") ? <th>agent</th> : null}
          {show("status") ? <th>status</th> : null}
          {show("attempts") ? <th class="num">attempts</th> : null}
          {show("tokens") ? (
            <th class="num" title="model tokens its recovery re-spent">
              tokens
            </th>
          ) : null}
          {show("reason") ? <th>reason</th> : null}
          {show("firstSeen") ? <th>first seen</th> : null}
          {show("lastSeen") ? <th>last seen</th> : null}
        </tr>
      </thead>
      <tbody>
        {props.rows.map((i) => (
          <tr>
            <td>
              <a class="mono" href={detailHref("incidents", i.incidentId, i)}>
                {i.incidentId}
              </a>
            </td>
            {show("kind") ? <td>{i.kind}</td> : null}
            {show("agent") ? (
              <td>
                <a href={agentHref(i)}>
                  {i.agentClass} · {i.agentName}
                </a>
              </td>
            ) : null}
            {show("status") ? (
              <td>
                <Status value={i.status} label={incidentStatusLabel(i)} />
              </td>
            ) : null}
            {show("attempts") ? <td class="num">{reportedAttempts(i)}</td> : null}
            {show("tokens") ? (
              <td class="num" data-testid="incident-tokens" data-tokens={String(i.respentInputTokens + i.respentOutputTokens)}>
                {i.respentInputTokens + i.respentOutputTokens ? (i.respentInputTokens + i.respentOutputTokens).toLocaleString("en-US") : "—"}
              </td>
            ) : null}
            {show("reason") ? <td>{i.reason ?? ""}</td> : null}
            {show("firstSeen") ? (
              <td>
                <Ago t={i.firstSeen} now={props.now} />
              </td>
            ) : null}
            {show("lastSeen") ? (
              <td>
                <Ago t={i.lastSeen} now={props.now} />
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
