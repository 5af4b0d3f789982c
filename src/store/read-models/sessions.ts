import { SESSION_STATUSES } from "@agent-oncall/telemetry/contract";
import { z } from "zod";
import type { HistoryTier } from "../history/tier";
import { listedAt } from "../listed-at";
import { sessions } from "../schema";
import { type ColumnKey, names, selectList } from "../sql-names";
import { eventsBy, type TimelinePage } from "./events";
import { instant, oneOf, parseFilters, sinceBeforeUntil, text } from "./filters";
import { type AgentRef, findOwned } from "./owner";
import { type AccessPath, choosePath, cond, keysetPage, type ListOrder, type Page, type PageOptions } from "./paging";

/** Sessions: last activity to the minute, newest first. The cursor's tag and sort key; merged reads (merged.ts) merge pages by it. */
export const SESSION_ORDER: ListOrder<SessionRow> = { tag: "sessions", keyOf: (r) => [r.listedAt, r.sessionName, r.agentClass, r.agentName] };

/**
 * Sessions, newest activity first to the minute (listed_at DESC, see src/store/listed-at.ts; then session_name DESC,
 * then the agent).
 * `status` is the last status the session REPORTED (the agent derives it;
 * the console only records the report), so it can lag the live agent.
 */

/** The statuses a session takes from its events, as the event registry declares them. */
export { SESSION_STATUSES };

/** Session list filters; since / until bound last_seen (inclusive). */
export const sessionFilters = z
  .object({
    status: oneOf("status", SESSION_STATUSES),
    agentClass: text("agentClass"),
    since: instant("since"),
    until: instant("until"),
  })
  .superRefine(sinceBeforeUntil);
export type SessionFilters = z.output<typeof sessionFilters>;
export type SessionFilterInput = { [K in keyof SessionFilters]?: unknown };

export type SessionRow = {
  sessionName: string;
  agentClass: string;
  agentName: string;
  /** null until the session reports a status (e.g. seen only through op.* or backup.* events). */
  status: (typeof SESSION_STATUSES)[number] | null;
  statusAt: number | null;
  lastEventType: string;
  lastEventAt: number;
  recoveryCount: number;
  lastTurnSeq: number | null;
  firstSeen: number;
  lastSeen: number;
  /** last_seen to the minute: the list's order. */
  listedAt: number;
};

const S = names(sessions);
const SELECT = selectList(sessions, [
  "sessionName",
  "agentClass",
  "agentName",
  "status",
  "statusAt",
  "lastEventType",
  "lastEventAt",
  "recoveryCount",
  "lastTurnSeq",
  "firstSeen",
  "lastSeen",
  "listedAt",
]);

/** status + agentClass together scan sessions_status and test the class per row (bounded by SCAN_BUDGET). */
const PATHS: AccessPath<ColumnKey<typeof sessions>>[] = [
  { index: "sessions_status", cols: ["status"] },
  { index: "sessions_class", cols: ["agentClass"] },
  { index: "sessions_listed", cols: [] },
];

/** Lists sessions, newest activity first. */
export async function listSessions(db: D1Database, filters: SessionFilterInput, page: PageOptions = {}): Promise<Page<SessionRow>> {
  const f = parseFilters(sessionFilters, filters);
  const p = choosePath(PATHS, {
    status: f.status === undefined ? undefined : cond(`${S.status} = ?`, f.status),
    agentClass: f.agentClass === undefined ? undefined : cond(`${S.agentClass} = ?`, f.agentClass),
  });
  // since / until bound last_seen exactly; the index range is their minutes (listed_at ≤ last_seen < listed_at + 1 min).
  const exact = [
    ...(f.since === undefined ? [] : [cond(`${S.lastSeen} >= ?`, f.since)]),
    ...(f.until === undefined ? [] : [cond(`${S.lastSeen} <= ?`, f.until)]),
  ];
  return keysetPage<SessionRow>(
    db,
    {
      ...SESSION_ORDER,
      table: S.$table,
      index: p.index,
      select: SELECT,
      order: [S.listedAt, S.sessionName, S.agentClass, S.agentName],
      types: ["number", "string", "string", "string"],
      dir: "DESC",
      where: p.where,
      residual: [...p.residual, ...exact],
      range: { min: f.since === undefined ? undefined : listedAt(f.since), max: f.until },
    },
    page,
  );
}

/**
 * One session by name: the row of `owner`, or the only agent's that reported the name, or null.
 * A name several agents reported needs the owner (BadRequest listing them).
 */
export async function getSession(db: D1Database, name: string, owner?: AgentRef): Promise<SessionRow | null> {
  const q = { table: S.$table, select: SELECT, key: S.sessionName, agentClass: S.agentClass, agentName: S.agentName, what: "session" as const };
  return findOwned<SessionRow>(db, q, name, owner);
}

/**
 * One agent's session's events, newest first: the agent's segments newest first, at most segmentBudget(limit) segments
 * read per page. No window: the session row's first/last seen move only with session.*, op.* and backup.* events,
 * while any event may carry the session's name (a stash, model usage), before or after them. With `history`, the
 * first page also reads the R2 history from the session's first activity to the hot window's start (newest first,
 * so a limit cuts the oldest part, which the page says).
 */
export function sessionTimeline(
  db: D1Database,
  session: Pick<SessionRow, "sessionName"> & Partial<Pick<SessionRow, "firstSeen">> & AgentRef,
  page: PageOptions = {},
  history?: HistoryTier,
): Promise<TimelinePage> {
  return eventsBy(
    db,
    { tag: "session-timeline", column: "sessionName", value: session.sessionName, owner: session, dir: "DESC", olderFrom: session.firstSeen ?? null },
    page,
    history,
  );
}
