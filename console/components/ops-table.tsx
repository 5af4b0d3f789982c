import type { OpRow } from "../../src/store/read-models";
import { ago } from "../format";
import { agentHref, detailHref } from "../links";
import { ColumnTable, columnSet } from "./columns";
import { type ResolveAvailability, ResolveOp } from "./resolve-op";
import { Status } from "./status";

/** Whether re-running the op is safe, in words. */
const idempotentText = (v: boolean | null) => (v === true ? "yes" : v === false ? "no" : "not said");

/** What an ops cell reads besides its row: the time, who looks (the Resolve control), and a unique control id. */
export type OpsCellContext = { now: number; role: "viewer" | "operator"; uid: string; availability?: ResolveAvailability };

/** The ops list's columns: the op, then those `cols=` picks (its resolution carries the Resolve control). */
export const OP_COLUMN_SET = columnSet<OpRow, OpsCellContext>(
  "ops",
  { id: "op", header: "op", fields: ["opId", "agentClass", "agentName"], attrs: () => ({ class: "mono" }), cell: (o) => o.opId },
  [
    { id: "kind", header: "kind", fields: ["opKind"], cell: (o) => o.opKind ?? "—" },
    {
      id: "owner",
      header: "session / agent",
      fields: ["sessionName", "agentClass", "agentName"],
      cell: (o) => (
        <>
          {o.sessionName ? <a href={detailHref("sessions", o.sessionName, o)}>{o.sessionName}</a> : null}
          {o.sessionName ? " · " : null}
          <a href={agentHref(o)}>
            {o.agentClass} · {o.agentName}
          </a>
        </>
      ),
    },
    { id: "detail", header: "detail", fields: ["detail"], cell: (o) => o.detail ?? "" },
    { id: "since", header: "since", fields: ["ambiguousAt", "firstSeen"], cell: (o, x) => ago(o.ambiguousAt ?? o.firstSeen, x.now) },
    { id: "idempotent", header: "idempotent", fields: ["idempotent"], cell: (o) => idempotentText(o.idempotent) },
    {
      id: "resolution",
      header: "resolution",
      fields: ["open", "resolution", "resolutionRef", "resolutionAt"],
      attrs: () => ({ "data-testid": "op-resolution" }),
      cell: (o, x) => (
        <>
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
          <ResolveOp op={o} role={x.role} uid={x.uid} {...(x.availability ? { availability: x.availability } : {})} />
        </>
      ),
    },
  ],
);

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
  /** The columns `cols=` picked (/ops). */
  cols?: readonly string[];
}) {
  const x: OpsCellContext = { now: props.now, role: props.role, uid: props.uidPrefix, ...(props.availability ? { availability: props.availability } : {}) };
  return (
    <ColumnTable
      set={OP_COLUMN_SET}
      rows={props.rows}
      x={x}
      xOf={(base, i) => ({ ...base, uid: `${props.uidPrefix}-${i}` })}
      testId={props.testId}
      cols={props.cols}
      hide={props.showOwner === false ? ["owner"] : []}
      rowAttrs={(o) => ({ "data-op-id": o.opId })}
    />
  );
}
