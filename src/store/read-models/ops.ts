import { z } from "zod";
import { opAmbiguities } from "../schema";
import { names, selectList } from "../sql-names";
import { flag, instant, parseFilters, sinceBeforeUntil, text } from "./filters";
import { cond, keysetPage, type ListOrder, type Page, type PageOptions } from "./paging";

/** Ambiguous ops: last seen, newest first. The cursor's tag and sort key; merged reads (merged.ts) merge pages by it. */
export const OP_ORDER: ListOrder<OpRow> = { tag: "ops", keyOf: (r) => [r.lastSeen, r.opId, r.agentClass, r.agentName] };

/**
 * Paid operations a recovery could not prove ran once, per agent. "Open" is derived:
 * no resolution reported yet. Newest activity first (last_seen DESC, op_id DESC, then the agent).
 */

/**
 * Ambiguous-op filters. since / until bound last_seen (inclusive); `agentClass`, `agentName` and `sessionName`
 * narrow to one agent's (or session's) ops: tested per row, scan bounded.
 */
export const opFilters = z
  .object({
    open: flag("open"),
    since: instant("since"),
    until: instant("until"),
    agentClass: text("agentClass"),
    agentName: text("agentName"),
    sessionName: text("sessionName"),
  })
  .superRefine(sinceBeforeUntil);
export type OpFilters = z.output<typeof opFilters>;
export type OpFilterInput = { [K in keyof OpFilters]?: unknown };

export type OpRow = {
  opId: string;
  agentClass: string;
  agentName: string;
  sessionName: string | null;
  opKind: string | null;
  detail: string | null;
  /** The op reported an idempotency key its upstream honours (re-running it is safe); null when it did not say. */
  idempotent: boolean | null;
  ambiguousAt: number | null;
  resolution: string | null;
  /** The result's reference (when it ran) or the re-run's (when re-issued). */
  resolutionRef: string | null;
  resolutionAt: number | null;
  firstSeen: number;
  lastSeen: number;
  /** Derived: no resolution yet. */
  open: boolean;
};

const O = names(opAmbiguities);
const SELECT = selectList(opAmbiguities, [
  "opId",
  "agentClass",
  "agentName",
  "sessionName",
  "opKind",
  "detail",
  "idempotent",
  "ambiguousAt",
  "resolution",
  "resolutionRef",
  "resolutionAt",
  "firstSeen",
  "lastSeen",
]);

/**
 * Lists ambiguous ops. open=true scans op_ambiguities_open (resolution_at IS
 * NULL is an index equality); open=false the partial index of resolved ones;
 * no filter op_ambiguities_last_seen. All O(page). One agent's open ops (open=true with its class and name) scan
 * op_ambiguities_agent_open, that agent's entries only; otherwise the agent and session filters are residual (no
 * index leads with them), so with them a page reads at most SCAN_BUDGET rows.
 */
export async function listAmbiguousOps(db: D1Database, filters: OpFilterInput, page: PageOptions = {}): Promise<Page<OpRow>> {
  const f = parseFilters(opFilters, filters);
  // One agent's open ops (its incident and session pages): their own partial index, the agent an index equality.
  const agentOpen = f.open === true && f.agentClass !== undefined && f.agentName !== undefined;
  const index = agentOpen
    ? "op_ambiguities_agent_open"
    : f.open === undefined
      ? "op_ambiguities_last_seen"
      : f.open
        ? "op_ambiguities_open"
        : "op_ambiguities_resolved";
  const where = [
    ...(f.open === undefined ? [] : [cond(f.open ? `${O.resolutionAt} IS NULL` : `${O.resolutionAt} IS NOT NULL`)]),
    ...(agentOpen ? [cond(`${O.agentClass} = ?`, f.agentClass), cond(`${O.agentName} = ?`, f.agentName)] : []),
  ];
  return keysetPage<OpRow>(
    db,
    {
      ...OP_ORDER,
      table: O.$table,
      index,
      select: SELECT,
      order: [O.lastSeen, O.opId, O.agentClass, O.agentName],
      types: ["number", "string", "string", "string"],
      dir: "DESC",
      where,
      range: { min: f.since, max: f.until },
      residual: [
        ...(f.agentClass !== undefined && !agentOpen ? [cond(`${O.agentClass} = ?`, f.agentClass)] : []),
        ...(f.agentName !== undefined && !agentOpen ? [cond(`${O.agentName} = ?`, f.agentName)] : []),
        ...(f.sessionName !== undefined ? [cond(`${O.sessionName} = ?`, f.sessionName)] : []),
      ],
      // D1 gives the integer flag back as a number.
      map: (r) => ({ ...r, idempotent: r.idempotent === null ? null : Boolean(r.idempotent), open: r.resolutionAt === null }),
    },
    page,
  );
}
