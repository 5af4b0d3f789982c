import { RUN_KINDS } from "@agent-oncall/telemetry/contract";
import type { Store } from "../partitions";
import { partitionFor } from "../partitions";
import { RUNS_OUTCOME_LISTED, runs } from "../schema";
import { names } from "../sql-names";
import { LOSS_KINDS, type LossCounts, lossCountStatement, lossCountsOf } from "./dead-letters";
import { listAgentsIn } from "./merged";
import { type Capped, cappedOf, DEFAULT_CAP, rowsReadOf, SCAN_BUDGET } from "./paging";

/**
 * What the console may have lost, counted where a person looks (the overview, an agent's page): runs whose end it does
 * not know, events lost on the way in, and agent classes it may act on but never heard from. Each count is of exactly
 * the rows its list lists (the runs list by outcome, the dead letters list by kind, the agents list by class): a
 * figure and its link never disagree. Counting them says what the console saw go missing, not that nothing else did.
 */

/** Run outcomes that say the console does not know how a run ended: never a claim, a possible loss. */
export const NOT_KNOWN_OUTCOMES = ["unknown", "ended_unreported"] as const;
export type NotKnownOutcome = (typeof NOT_KNOWN_OUTCOMES)[number];

export type PossibleLosses = {
  /** Runs the store holds with each not-known outcome (ended runs stay for the hot window, HOT_WINDOW_HOURS). Capped. */
  runs: Record<NotKnownOutcome, Capped>;
  /** Dead letters received since `since`, by kind of loss (dead-letters.ts), among the newest LOSS_COUNT_WINDOW + 1. */
  lost: LossCounts;
  /** Classes the console is bound to act on (AGENT_CLASSES) from which no event ever arrived: no agent of theirs is in the registry. */
  unheardClasses: string[];
  since: number;
  rowsRead: number;
};

const F = names(runs);

/**
 * Runs with one outcome, at most cap + 1 rows: runs_kind_outcome merged over the kinds (every run has one), the same
 * index /runs?outcome= pages through. Its partial condition is repeated so SQLite may use it.
 */
function outcomeCountStatement(db: D1Database, outcome: string, cap: number): D1PreparedStatement {
  const arm = (k: string) =>
    `SELECT 1 FROM ${F.$table} INDEXED BY runs_kind_outcome WHERE ${F.kind} = '${k}' AND ${F.outcome} = ?1 AND (${RUNS_OUTCOME_LISTED})`;
  return db.prepare(`SELECT COUNT(*) AS n FROM (${RUN_KINDS.map(arm).join(" UNION ALL ")} LIMIT ?2)`).bind(outcome, cap + 1);
}

/** Sums capped counts; n capped again at `cap`. */
function sumCapped(counts: Capped[], cap: number): Capped {
  const n = counts.reduce((a, c) => a + c.n, 0);
  return { n: Math.min(n, cap), capped: n > cap || counts.some((c) => c.capped) };
}

/**
 * The fleet's possible losses: per partition, each not-known outcome's capped count (at most cap + 1 index rows
 * each); the dead letters of the home database since `since` (at most LOSS_COUNT_WINDOW + 1 rows); per bound class,
 * its newest agent (about one row per partition).
 */
export async function possibleLossesIn(store: Store, opts: { since: number; boundClasses: readonly string[]; cap?: number }): Promise<PossibleLosses> {
  const cap = opts.cap ?? DEFAULT_CAP;
  const [parts, lostR, classes] = await Promise.all([
    Promise.all(store.parts.map((db) => db.batch<{ n: number }>(NOT_KNOWN_OUTCOMES.map((o) => outcomeCountStatement(db, o, cap))))),
    lossCountStatement(store.home, opts.since).all<{ kind: string; n: number }>(),
    Promise.all(opts.boundClasses.map(async (c) => ({ c, page: await listAgentsIn(store, { agentClass: c }, { limit: 1 }) }))),
  ]);
  const runsOf = Object.fromEntries(
    NOT_KNOWN_OUTCOMES.map((o, i) => [
      o,
      sumCapped(
        parts.map((p) => cappedOf(p[i]!, cap)),
        cap,
      ),
    ]),
  ) as Record<NotKnownOutcome, Capped>;
  const lost = lossCountsOf(lostR);
  return {
    runs: runsOf,
    lost,
    unheardClasses: classes.filter((x) => x.page.items.length === 0).map((x) => x.c),
    since: opts.since,
    rowsRead: parts.flat().reduce((a, r) => a + rowsReadOf(r), 0) + lost.rowsRead + classes.reduce((a, x) => a + x.page.rowsRead, 0),
  };
}

/** Nothing counted at all: every part zero. */
export const noPossibleLoss = (p: PossibleLosses) =>
  NOT_KNOWN_OUTCOMES.every((o) => p.runs[o].n === 0) && LOSS_KINDS.every((k) => p.lost.byKind[k] === 0) && p.unheardClasses.length === 0;

/** One agent's runs whose end the console does not know, among its newest SCAN_BUDGET runs (`capped`: it may have more). */
export type AgentNotKnown = { runs: Record<NotKnownOutcome, number>; scanned: number; capped: boolean; rowsRead: number };

/**
 * One agent's not-known runs: its newest SCAN_BUDGET runs through runs_agent (the index /runs?agentClass&agentName
 * pages through, testing the outcome per row within the same budget), counted by outcome. At most SCAN_BUDGET rows.
 */
export async function agentNotKnown(store: Store, agent: { agentClass: string; agentName: string }): Promise<AgentNotKnown> {
  const db = partitionFor(store, agent.agentClass, agent.agentName);
  const sums = NOT_KNOWN_OUTCOMES.map((_, i) => `COALESCE(SUM(outcome = ?${i + 4}), 0) AS o${i}`).join(", ");
  const r = await db
    .prepare(
      `SELECT COUNT(*) AS scanned, ${sums} FROM (SELECT ${F.outcome} AS outcome FROM ${F.$table} INDEXED BY runs_agent
         WHERE ${F.agentClass} = ?1 AND ${F.agentName} = ?2 ORDER BY ${F.firstSeen} DESC LIMIT ?3)`,
    )
    .bind(agent.agentClass, agent.agentName, SCAN_BUDGET, ...NOT_KNOWN_OUTCOMES)
    .all<Record<string, number>>();
  const row = r.results[0] ?? {};
  const scanned = Number(row.scanned ?? 0);
  return {
    runs: Object.fromEntries(NOT_KNOWN_OUTCOMES.map((o, i) => [o, Number(row[`o${i}`] ?? 0)])) as Record<NotKnownOutcome, number>,
    scanned,
    capped: scanned >= SCAN_BUDGET,
    rowsRead: rowsReadOf(r),
  };
}
