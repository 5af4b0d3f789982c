import type { RecoveryBudgetOutput } from "../../admin-rpc/recovery-budget.js";
import { incidents, respentRollups } from "../schema";
import { names } from "../sql-names";
import { overlayAppliesSql } from "./incident-status";
import { rowsReadOf } from "./paging";

/**
 * Recovery budgets: how much of its budget an open chat incident has left, and when it is likely to exhaust.
 * The SDK bounds only chat recovery (attempts, work, a no-progress window, a stable wait per attempt); fiber
 * recovery has no maximum, so fiber incidents have no budget here. Facts only: console/ words them.
 */

const I = names(incidents);
const RS = names(respentRollups);

/** What a forecast needs: the attempt counter the cap compares, its maximum, and when the counted attempts ran. */
export type ForecastInput = {
  attempt: number | null;
  maxAttempts: number | null;
  /** When the first counted attempt ran (the counter's start: the last progress, else the first attempt). */
  firstAttemptAt: number | null;
  lastAttemptAt: number | null;
  /** When the no-progress window ends (the SDK seals the first attempt after it); null when unknown. */
  noProgressDeadline?: number | null;
  /**
   * Attempts whose isolate died (the SDK's interruptedAttempts, counted since the incident opened at
   * `firstSeenAt`; it never restarts on progress), and the bound it seals at (reaching it exhausts).
   */
  interrupted?: { count: number; max: number | null; firstSeenAt: number } | null;
};

export type ForecastBound = "max_attempts" | "no_progress" | "max_interrupted_attempts";

/**
 * `at`: when the incident is expected to exhaust; null with `basis: "unknown"` when fewer than 2 attempts ran (no
 * rate yet) or no maximum is known. `intervalMs`: its own mean time between attempts. `bound` names the limit that
 * is reached first, assuming no progress from now on (progress restarts the attempt counter and the window).
 */
export type Forecast =
  | { basis: "unknown"; at: null; intervalMs: null; bound: null }
  | { basis: "attempt_rate"; at: number; intervalMs: number; bound: ForecastBound };

const UNKNOWN: Forecast = { basis: "unknown", at: null, intervalMs: null, bound: null };

/**
 * Projects the next attempts at the incident's own mean interval. The attempt cap: it exhausts at the attempt that
 * exceeds the maximum (attempt > maxAttempts, as the SDK decides), or at the first attempt after the no-progress
 * deadline. The interruption budget: at the attempt whose dead isolates bring interruptedAttempts to its bound,
 * at the rate isolates died since the incident opened (an eviction loop that keeps making a little progress never
 * moves the attempt counter, but always this one). The soonest wins.
 */
export function forecastExhaustion(f: ForecastInput): Forecast {
  const options: { at: number; intervalMs: number; bound: ForecastBound }[] = [];
  const { attempt, maxAttempts, firstAttemptAt, lastAttemptAt } = f;
  if (attempt !== null && maxAttempts !== null && firstAttemptAt !== null && lastAttemptAt !== null && attempt >= 2) {
    const intervalMs = (lastAttemptAt - firstAttemptAt) / (attempt - 1);
    if (intervalMs > 0) {
      const toCap = Math.max(1, maxAttempts + 1 - attempt);
      const deadline = f.noProgressDeadline ?? null;
      const toDeadline = deadline === null ? Number.POSITIVE_INFINITY : Math.max(1, Math.floor((deadline - lastAttemptAt) / intervalMs) + 1);
      const k = Math.min(toCap, toDeadline);
      options.push({ at: lastAttemptAt + k * intervalMs, intervalMs, bound: toCap <= toDeadline ? "max_attempts" : "no_progress" });
    }
  }
  const i = f.interrupted;
  if (i && i.max !== null && i.count >= 2 && lastAttemptAt !== null) {
    const intervalMs = (lastAttemptAt - i.firstSeenAt) / (i.count - 1);
    if (intervalMs > 0) options.push({ at: lastAttemptAt + Math.max(1, i.max - i.count) * intervalMs, intervalMs, bound: "max_interrupted_attempts" });
  }
  if (!options.length) return UNKNOWN;
  const best = options.reduce((a, b) => (b.at < a.at ? b : a));
  return { basis: "attempt_rate", at: Math.round(best.at), intervalMs: Math.round(best.intervalMs), bound: best.bound };
}

/** The incident row facts a budget starts from. */
export type BudgetRowFacts = {
  kind: string;
  attempts: number;
  maxAttempts: number | null;
  firstSeen: number;
  lastSeen: number;
  /** Attempt events the incident emitted (each stall retry emits one while the SDK's counter stays put). */
  attemptEvents?: number;
};

/** A figure against its limit; `limit` null: the SDK sets none (unbounded) or it is unknown. */
export type Against = { used: number | null; limit: number | null };
/** A timer's deadline and what is left of it at `now` (negative: passed). */
export type TimerLeft = { deadline: number; leftMs: number } | null;

/**
 * An open incident's budget. `source` says where the figures come from: `agent` (its own chat-recovery record and
 * resolved bounds, through admin RPC), `events` (the agent could not be asked, or keeps no record of it: attempts
 * and maximum as its events reported them), or `none` (not a chat incident: the SDK bounds no other recovery).
 */
export type IncidentBudget = {
  source: "agent" | "events" | "none";
  attempts: Against;
  work: Against;
  interruptedAttempts: Against;
  /** Retries after transient model errors, against the same maxAttempts. */
  transientRetries: Against;
  /** The stable wait of the latest attempt (lastAttemptAt + stableTimeoutMs). */
  stableTimer: TimerLeft;
  /** The no-progress window (lastProgressAt + noProgressTimeoutMs). */
  noProgressTimer: TimerLeft;
  forecast: Forecast;
  /** Why the agent's figures are missing, when source is not `agent` (the admin error's code). */
  agentError: string | null;
  now: number;
};

const left = (deadline: number | null, now: number): TimerLeft => (deadline === null ? null : { deadline, leftMs: deadline - now });

/**
 * Combines the incident's row with what the agent answered (adminRecoveryBudget for this incident), at `now`.
 * The agent's record wins where it has one: its counter is the one the SDK compares.
 */
export function incidentBudget(
  row: BudgetRowFacts & { incidentId: string },
  agent: { ok: true; value: RecoveryBudgetOutput } | { ok: false; error: { code: string } } | null,
  now: number,
): IncidentBudget {
  const none: Against = { used: null, limit: null };
  if (row.kind !== "chat")
    return {
      source: "none",
      attempts: none,
      work: none,
      interruptedAttempts: none,
      transientRetries: none,
      stableTimer: null,
      noProgressTimer: null,
      forecast: UNKNOWN,
      agentError: null,
      now,
    };
  const rec = agent?.ok ? agent.value.records.find((r) => r.incidentId === row.incidentId) : undefined;
  const cfg = agent?.ok ? agent.value.config : null;
  if (!agent?.ok || !rec) {
    return {
      source: "events",
      attempts: { used: row.attempts, limit: row.maxAttempts },
      work: none,
      interruptedAttempts: none,
      transientRetries: none,
      stableTimer: null,
      noProgressTimer: null,
      forecast: forecastFromRow(row),
      agentError: agent && !agent.ok ? agent.error.code : agent?.ok ? "no_record" : null,
      now,
    };
  }
  const noProgressDeadline = cfg && rec.lastProgressAt !== null ? rec.lastProgressAt + cfg.noProgressTimeoutMs : null;
  return {
    source: "agent",
    attempts: { used: rec.attempt, limit: rec.maxAttempts ?? cfg?.maxAttempts ?? null },
    work: { used: rec.work, limit: cfg?.maxRecoveryWork ?? null },
    interruptedAttempts: { used: rec.interruptedAttempts, limit: cfg?.maxInterruptedAttempts ?? null },
    transientRetries: { used: rec.transientRetries, limit: rec.maxAttempts ?? cfg?.maxAttempts ?? null },
    stableTimer: cfg && rec.lastAttemptAt !== null ? left(rec.lastAttemptAt + cfg.stableTimeoutMs, now) : null,
    noProgressTimer: left(noProgressDeadline, now),
    forecast: forecastExhaustion({
      attempt: rec.attempt,
      maxAttempts: rec.maxAttempts ?? cfg?.maxAttempts ?? null,
      // The counter restarts at the last progress: the counted attempts ran since then.
      firstAttemptAt: rec.lastProgressAt ?? rec.firstSeenAt,
      lastAttemptAt: rec.lastAttemptAt,
      noProgressDeadline,
      interrupted: rec.firstSeenAt !== null ? { count: rec.interruptedAttempts, max: cfg?.maxInterruptedAttempts ?? null, firstSeenAt: rec.firstSeenAt } : null,
    }),
    agentError: null,
    now,
  };
}

/**
 * The forecast from the incident's row alone (its events): attempts between first and last seen. The attempts are
 * the SDK's counter or, when more, the attempt events: a model that keeps stalling is retried as a transient error,
 * which the SDK counts against the same maxAttempts (transientRetries) while every event still says `attempt: 1`
 * (seen on Think: 5 attempt events, all at 1, then max_attempts_exceeded at maxAttempts 4). After progress restarts
 * the counter, the events overcount: the forecast then errs early, a warning rather than a silence.
 */
export function forecastFromRow(row: BudgetRowFacts): Forecast {
  if (row.kind !== "chat") return UNKNOWN;
  const attempt = Math.max(row.attempts, row.attemptEvents ?? 0);
  return forecastExhaustion({ attempt, maxAttempts: row.maxAttempts, firstAttemptAt: row.firstSeen, lastAttemptAt: row.lastSeen });
}

/*
 * What the "likely to exhaust" card can forecast, and why it was empty on the demo fleet (issue 36: 343 polls over
 * 19 minutes, none with a row).
 * - Only chat incidents have a budget: the SDK bounds chat recovery (maxAttempts, the no-progress window,
 *   maxInterruptedAttempts). Session turn incidents (kind "turn") and fiber incidents have no maximum, so nothing
 *   can be forecast for them; most of the demo fleet's open incidents are turns.
 * - A chat incident needs its counter at 2 or more (2 attempts give one interval: a rate) and a known maxAttempts,
 *   from its own events: attempts, maxAttempts, first seen (the first attempt) and last seen (the latest).
 * - The demo's chat incidents come from a stalling model. A stall is retried as a transient error: the SDK counts
 *   it against maxAttempts (transientRetries) but every event keeps `attempt: 1` (test/chat/forecast.test.ts saw 5
 *   attempt events, all at 1, then max_attempts_exceeded), so a forecast from the counter never had a rate.
 *   forecastFromRow now counts the attempt events too.
 * - It shows while the forecast lies within the window and the incident is still open. The demo's chat agents
 *   allow 2 attempts with a 300 ms stall cut: the whole incident lasts about a second, between two polls of the
 *   card (every 15 s), so even with a rate it would rarely be seen.
 * So the card needs a chat incident whose attempts are spaced wider than the poll interval and whose cap leaves at
 * least one attempt after the second; NotForecast names the open incidents it cannot forecast, so the card is
 * never silently empty.
 */

/**
 * A closed chat incident's forecast, scored against what happened: the first forecast the card could show (at its
 * second counted attempt, from the same facts forecastFromRow reads then: the highest attempt so far, the maximum,
 * first seen and that attempt's time), the latest one before the outcome, and the outcome. Replayed from the
 * incident's own attempt events, so it needs no write when the card is polled; `errorMs` is how late (positive) or
 * early (negative) the exhaustion came against the latest forecast, null when it did not exhaust.
 */
export type ForecastScore = {
  first: { madeAt: number; at: number; bound: ForecastBound };
  latest: { madeAt: number; at: number; bound: ForecastBound };
  outcome: string;
  outcomeAt: number;
  errorMs: number | null;
};

/** The attempt events scoreForecast replays: time and the SDK's counter as the event reported it. */
export type AttemptPoint = { time: number; attempt: number | null };

/** A chat incident's attempt events (chat.recovery.attempt) among timeline events, as scoreForecast replays them. */
export function attemptPointsOf(events: { type: string; time: number; payload: unknown }[]): AttemptPoint[] {
  return events
    .filter((e) => e.type === "chat.recovery.attempt")
    .map((e) => {
      const n = (e.payload as { attempt?: unknown } | null)?.attempt;
      return { time: e.time, attempt: typeof n === "number" ? n : null };
    });
}

export function scoreForecast(
  incident: { kind: string; status: string; statusAt: number; maxAttempts: number | null; firstSeen: number; reason: string | null },
  attempts: AttemptPoint[],
): ForecastScore | null {
  if (incident.kind !== "chat" || incident.status === "open") return null;
  const points = [...attempts].sort((x, y) => x.time - y.time).filter((a) => a.time <= incident.statusAt);
  // The attempt that exceeded the cap is the outcome itself, not a moment the card could have warned at.
  const warnable = incident.status === "exhausted" && incident.reason === "max_attempts_exceeded" ? points.slice(0, -1) : points;
  let first: ForecastScore["first"] | null = null;
  let latest: ForecastScore["latest"] | null = null;
  let counter = 0;
  let events = 0;
  for (const a of warnable) {
    // As forecastFromRow counts: the SDK's counter or the attempt events, whichever is more.
    events++;
    counter = Math.max(counter, a.attempt ?? 0, events);
    const f = forecastExhaustion({ attempt: counter, maxAttempts: incident.maxAttempts, firstAttemptAt: incident.firstSeen, lastAttemptAt: a.time });
    if (f.basis !== "attempt_rate") continue;
    latest = { madeAt: a.time, at: f.at, bound: f.bound };
    first ??= latest;
  }
  if (!first || !latest) return null;
  const exhausted = incident.status === "exhausted";
  return { first, latest, outcome: incident.status, outcomeAt: incident.statusAt, errorMs: exhausted ? incident.statusAt - latest.at : null };
}

/** Open incidents exhaustingSoon looks at, at most (open incidents are few; past this the card says "at least"). */
export const EXHAUST_SCAN = 500;

export type ExhaustingIncident = {
  incidentId: string;
  agentClass: string;
  agentName: string;
  attempts: number;
  maxAttempts: number | null;
  forecast: Extract<Forecast, { basis: "attempt_rate" }>;
};

export type ExhaustingSoon = {
  items: ExhaustingIncident[];
  /** The window looked ahead: incidents forecast to exhaust by `now + windowMs`. */
  windowMs: number;
  /** The open incidents looked at that are not on the list, by why: the card names them instead of staying empty. */
  notForecast: NotForecast;
  /** More open incidents than EXHAUST_SCAN: the newest only were looked at. */
  bounded: boolean;
  rowsRead: number;
};

/** Open incidents with no forecast in the window, counted by why. */
export type NotForecast = {
  /** Kinds whose recovery the SDK does not bound (session turns, fibers): no budget to forecast from. */
  noBudget: { turn: number; fiber: number };
  /** Chat incidents with no rate yet (fewer than 2 attempts) or no known maximum. */
  noRate: number;
  /** Chat incidents forecast past the window, or overdue by more than an interval (their attempts stopped). */
  outside: number;
};

export const noneNotForecast = (): NotForecast => ({ noBudget: { turn: 0, fiber: 0 }, noRate: 0, outside: 0 });

/** Sums partitions' NotForecast counts (each counts its own open incidents). */
export function addNotForecast(a: NotForecast, b: NotForecast): NotForecast {
  return {
    noBudget: { turn: a.noBudget.turn + b.noBudget.turn, fiber: a.noBudget.fiber + b.noBudget.fiber },
    noRate: a.noRate + b.noRate,
    outside: a.outside + b.outside,
  };
}

/**
 * Open chat incidents (open now: no newer force idle or reconciliation closed them) likely to exhaust within
 * `windowMs` (and not more than one of their intervals overdue), soonest first, forecast from their own events (forecastFromRow): the overview card and its alert.
 * Reads the incidents_open index range, at most EXHAUST_SCAN + 1 rows.
 */
export async function exhaustingSoon(db: D1Database, now: number, windowMs: number, limit = 20): Promise<ExhaustingSoon> {
  const r = await db
    .prepare(
      `SELECT ${I.incidentId} AS incidentId, ${I.agentClass} AS agentClass, ${I.agentName} AS agentName, ${I.kind} AS kind, ${I.attempts} AS attempts,
              ${I.maxAttempts} AS maxAttempts, ${I.firstSeen} AS firstSeen, ${I.lastSeen} AS lastSeen, ${I.attemptEvents} AS attemptEvents
       FROM ${I.$table} INDEXED BY incidents_open WHERE ${I.status} = 'open' AND NOT ${overlayAppliesSql()}
       ORDER BY ${I.lastSeen} DESC LIMIT ?`,
    )
    .bind(EXHAUST_SCAN + 1)
    .all<BudgetRowFacts & { incidentId: string; agentClass: string; agentName: string }>();
  const rows = r.results.slice(0, EXHAUST_SCAN);
  const items: ExhaustingIncident[] = [];
  const notForecast = noneNotForecast();
  for (const row of rows) {
    if (row.kind === "turn" || row.kind === "fiber") {
      notForecast.noBudget[row.kind]++;
      continue;
    }
    const f = forecastFromRow(row);
    if (f.basis !== "attempt_rate") notForecast.noRate++;
    // A forecast more than one interval overdue is not coming: its attempts stopped (the stuck page's concern).
    else if (f.at > now + windowMs || f.at < now - f.intervalMs) notForecast.outside++;
    else
      items.push({
        incidentId: row.incidentId,
        agentClass: row.agentClass,
        agentName: row.agentName,
        // The count the forecast used (forecastFromRow): stall retries move it when the SDK's counter does not.
        attempts: Math.max(row.attempts, row.attemptEvents ?? 0),
        maxAttempts: row.maxAttempts,
        forecast: f,
      });
  }
  items.sort(compareExhausting);
  return { items: items.slice(0, limit), windowMs, notForecast, bounded: r.results.length > EXHAUST_SCAN, rowsRead: rowsReadOf(r) };
}

/** exhaustingSoon's order: soonest first; ties by agent and incident, so the cut at `limit` is the same whichever partitions hold them. */
export const compareExhausting = (a: ExhaustingIncident, b: ExhaustingIncident): number =>
  a.forecast.at - b.forecast.at || cmp(a.agentClass, b.agentClass) || cmp(a.agentName, b.agentName) || cmp(a.incidentId, b.incidentId);

const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);

const BUCKET_MS = 5 * 60_000;
export const HOUR_MS = 3_600_000;

export type Respent = { agentClass: string; agentName: string | null; tokens: number };

/**
 * Tokens chat recovery re-spent in the last hour (the 5-minute buckets from the one holding now − 1 h, so up to
 * 5 minutes more), per agent and per class, largest first. Reads one primary-key range: 13 buckets × agents that
 * re-spent anything.
 */
export async function respentLastHour(db: D1Database, now: number): Promise<{ agents: Respent[]; classes: Respent[]; since: number; rowsRead: number }> {
  const since = Math.floor((now - HOUR_MS) / BUCKET_MS) * BUCKET_MS;
  const r = await db
    .prepare(
      `SELECT ${RS.agentClass} AS agentClass, ${RS.agentName} AS agentName, SUM(${RS.tokens}) AS tokens FROM ${RS.$table}
       WHERE ${RS.bucket} >= ? AND ${RS.bucket} <= ? GROUP BY ${RS.agentClass}, ${RS.agentName}`,
    )
    .bind(since, now)
    .all<{ agentClass: string; agentName: string; tokens: number }>();
  const agents = r.results.map((x) => ({ agentClass: x.agentClass, agentName: x.agentName, tokens: Number(x.tokens) }));
  const byClass = new Map<string, number>();
  for (const a of agents) byClass.set(a.agentClass, (byClass.get(a.agentClass) ?? 0) + a.tokens);
  return {
    agents: agents.sort((a, b) => b.tokens - a.tokens),
    classes: [...byClass].map(([agentClass, tokens]) => ({ agentClass, agentName: null, tokens })).sort((a, b) => b.tokens - a.tokens),
    since,
    rowsRead: rowsReadOf(r),
  };
}
