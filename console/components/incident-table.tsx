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

/** Incidents as a table: the overview's worst list and the incidents page share it. */
export function IncidentTable(props: { rows: IncidentRow[]; now: number; testId: string; showFirstSeen?: boolean }) {
  return (
    <table data-testid={props.testId}>
      <thead>
        <tr>
          <th>incident</th>
          <th>kind</th>
          <th>agent</th>
          <th>status</th>
          <th class="num">attempts</th>
          <th class="num" title="model tokens its recovery re-spent">
            tokens
          </th>
          <th>reason</th>
          {props.showFirstSeen ? <th>first seen</th> : null}
          <th>last seen</th>
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
            <td>{i.kind}</td>
            <td>
              <a href={agentHref(i)}>
                {i.agentClass} · {i.agentName}
              </a>
            </td>
            <td>
              <Status value={i.status} label={incidentStatusLabel(i)} />
            </td>
            <td class="num">{reportedAttempts(i)}</td>
            <td class="num">{i.respentInputTokens + i.respentOutputTokens ? (i.respentInputTokens + i.respentOutputTokens).toLocaleString("en-US") : "—"}</td>
            <td>{i.reason ?? ""}</td>
            {props.showFirstSeen ? (
              <td>
                <Ago t={i.firstSeen} now={props.now} />
              </td>
            ) : null}
            <td>
              <Ago t={i.lastSeen} now={props.now} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
