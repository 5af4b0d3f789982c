import { z } from "zod";
import { opAmbiguities } from "../schema";
import { names, selectList } from "../sql-names";
import { flag, instant, parseFilters, sinceBeforeUntil } from "./filters";
import { type Page, type PageOptions, cond, keysetPage } from "./paging";

/**
 * Paid operations a recovery could not prove ran once, per agent. "Open" is derived:
 * no resolution reported yet. Newest activity first (last_seen DESC, op_id DESC, then the agent).
 */

/** Ambiguous-op filters; since / until bound last_seen (inclusive). */
export const opFilters = z.object({ open: flag("open"), since: instant("since"), until: instant("until") }).superRefine(sinceBeforeUntil);
export type OpFilters = z.output<typeof opFilters>;
export type OpFilterInput = { [K in keyof OpFilters]?: unknown };

export type OpRow = {
  opId: string;
  agentClass: string;
  agentName: string;
  sessionName: string | null;
  opKind: string | null;
  detail: string | null;
  ambiguousAt: number | null;
  resolution: string | null;
  resolutionAt: number | null;
  firstSeen: number;
  lastSeen: number;
  /** Derived: no resolution yet. */
  open: boolean;
};

const O = names(opAmbiguities);
const SELECT = selectList(opAmbiguities, [
  "opId", "agentClass", "agentName", "sessionName", "opKind", "detail",
  "ambiguousAt", "resolution", "resolutionAt", "firstSeen", "lastSeen",
]);

/**
 * Lists ambiguous ops. open=true scans op_ambiguities_open (resolution_at IS
 * NULL is an index equality); open=false the partial index of resolved ones;
 * no filter op_ambiguities_last_seen. All O(page).
 */
export async function listAmbiguousOps(db: D1Database, filters: OpFilterInput, page: PageOptions = {}): Promise<Page<OpRow>> {
  const f = parseFilters(opFilters, filters);
  const index = f.open === undefined ? "op_ambiguities_last_seen" : f.open ? "op_ambiguities_open" : "op_ambiguities_resolved";
  const where = f.open === undefined ? [] : [cond(f.open ? `${O.resolutionAt} IS NULL` : `${O.resolutionAt} IS NOT NULL`)];
  return keysetPage<OpRow>(
    db,
    {
      tag: "ops",
      table: O.$table,
      index,
      select: SELECT,
      order: [O.lastSeen, O.opId, O.agentClass, O.agentName],
      types: ["number", "string", "string", "string"],
      dir: "DESC",
      where,
      range: { min: f.since, max: f.until },
      keyOf: (r) => [r.lastSeen, r.opId, r.agentClass, r.agentName],
      map: (r) => ({ ...r, open: r.resolutionAt === null }),
    },
    page,
  );
}
