import type { OpRow } from "../../src/store/read-models";
import { ago } from "../format";
import { agentHref, detailHref } from "../links";
import { type ResolveAvailability, ResolveOp } from "./resolve-op";
import { Status } from "./status";

/** Whether re-running the op is safe, in words. */
const idempotentText = (v: boolean | null) => (v === true ? "yes" : v === false ? "no" : "not said");

/**
 * Ambiguous ops with, for each open one, its Resolve control (operators) or why there is none. Used by /ops,
 * the session page and the incident page. `uidPrefix` keeps the controls' ids unique on a page with two tables.
 */
export function OpsTable(props: {
  rows: OpRow[];
  now: number;
  role: "viewer" | "operator";
  testId: string;
  uidPrefix: string;
  availability?: ResolveAvailability;
  /** Hide the session/agent column where the page is about one already. */
  showOwner?: boolean;
}) {
  const showOwner = props.showOwner !== false;
  return (
    <table data-testid={props.testId}>
      <thead>
        <tr>
          <th>op</th>
          <th>kind</th>
          {showOwner ? <th>session / agent</th> : null}
          <th>detail</th>
          <th>since</th>
          <th>idempotent</th>
          <th>resolution</th>
        </tr>
      </thead>
      <tbody>
        {props.rows.map((o, i) => (
          <tr data-op-id={o.opId}>
            <td class="mono">{o.opId}</td>
            <td>{o.opKind ?? "—"}</td>
            {showOwner ? (
              <td>
                {o.sessionName ? <a href={detailHref("sessions", o.sessionName, o)}>{o.sessionName}</a> : null}
                {o.sessionName ? " · " : null}
                <a href={agentHref(o)}>
                  {o.agentClass} · {o.agentName}
                </a>
              </td>
            ) : null}
            <td>{o.detail ?? ""}</td>
            <td>{ago(o.ambiguousAt ?? o.firstSeen, props.now)}</td>
            <td>{idempotentText(o.idempotent)}</td>
            <td data-testid="op-resolution">
              {o.open ? (
                <Status value="open" />
              ) : (
                <span>
                  {o.resolution}
                  {o.resolutionRef ? (
                    <>
                      {" "}
                      · <span class="mono">{o.resolutionRef}</span>
                    </>
                  ) : null}
                </span>
              )}
              <ResolveOp op={o} role={props.role} uid={`${props.uidPrefix}-${i}`} {...(props.availability ? { availability: props.availability } : {})} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
