import { PRICES } from "./prices";

/**
 * A monthly bill from measured per-event figures, at the list prices in prices.ts (Workers Paid, included usage
 * subtracted, the plan's base fee named). Storage is the steady state: D1 holds the hot store (each table by its own
 * keep time, steady-size.ts); R2 is taken after one month of history (it grows by that much every month it is kept).
 */

/** What one event costs, as the simulator measured it (or, where stated, as the mix's capture path measured it). */
export type PerEvent = {
  d1RowsWritten: number;
  d1RowsRead: number;
  d1Bytes: number;
  /** Queue operations: write + read + delete per 64 KB of each message, per event. */
  queueOps: number;
  r2ClassA: number;
  r2ClassB: number;
  r2Bytes: number;
  /** The console's tail handler: invocations per event (items with no message included) and CPU ms per event. */
  tailInvocations: number;
  tailCpuMs: number;
  /** The agent side: Durable Object SQLite rows written per event (the outbox; 0 on the tail path). */
  agentRowsWritten: number;
};

export type MonthlyBill = {
  events: number;
  d1Written: number;
  d1Read: number;
  d1Storage: number;
  d1StorageGb: number;
  queues: number;
  r2: number;
  /** Tail invocations: Workers requests and CPU. */
  tail: number;
  /** The agent side's Durable Object rows. */
  agentSide: number;
  /** Workers Paid's minimum monthly charge, per account: in the bill, never in a per-event figure. */
  baseFee: number;
  total: number;
};

export const MONTH_DAYS = 30;
const MONTH_HOURS = MONTH_DAYS * 24;
const GB = 1e9;

const over = (used: number, included: number, perUnit: number, unit: number) => (Math.max(0, used - included) / unit) * perUnit;

/**
 * The bill for `agents` agents emitting `ratePerAgentPerMinute` events each, for 30 days. D1 storage is `d1DaysKept`
 * days of events, or `d1SteadyGb` when given (the hot store's steady state: each table by its own keep time).
 */
export function monthlyBill(per: PerEvent, agents: number, ratePerAgentPerMinute: number, d1DaysKept: number, d1SteadyGb?: number): MonthlyBill {
  const events = agents * ratePerAgentPerMinute * 60 * 24 * MONTH_DAYS;
  const p = PRICES;
  const d1Written = over(events * per.d1RowsWritten, p.d1.rowsWrittenIncluded, p.d1.rowsWrittenPerMillion, 1e6);
  const d1Read = over(events * per.d1RowsRead, p.d1.rowsReadIncluded, p.d1.rowsReadPerMillion, 1e6);
  const d1StorageGb = d1SteadyGb ?? (per.d1Bytes * events * Math.min(d1DaysKept, MONTH_DAYS * 12)) / MONTH_DAYS / GB;
  const d1Storage = over(d1StorageGb, p.d1.storageIncludedGb, p.d1.storagePerGbMonth, 1);
  const queues = over(events * per.queueOps, p.queues.opsIncluded, p.queues.opsPerMillion, 1e6);
  const r2 =
    over(events * per.r2ClassA, p.r2.classAIncluded, p.r2.classAPerMillion, 1e6) +
    over(events * per.r2ClassB, p.r2.classBIncluded, p.r2.classBPerMillion, 1e6) +
    over((events * per.r2Bytes) / GB, p.r2.storageIncludedGb, p.r2.storagePerGbMonth, 1);
  const tail =
    over(events * per.tailInvocations, p.workers.requestsIncluded, p.workers.requestsPerMillion, 1e6) +
    over(events * per.tailCpuMs, p.workers.cpuMsIncluded, p.workers.cpuMsPerMillion, 1e6);
  const agentSide = over(events * per.agentRowsWritten, p.durableObjects.rowsWrittenIncluded, p.durableObjects.rowsWrittenPerMillion, 1e6);
  const baseFee = p.workers.baseFeePerMonth;
  return {
    events,
    d1Written,
    d1Read,
    d1Storage,
    d1StorageGb,
    queues,
    r2,
    tail,
    agentSide,
    baseFee,
    total: d1Written + d1Read + d1Storage + queues + r2 + tail + agentSide + baseFee,
  };
}

/** The marginal cost of one million events, by line (no included usage, no base fee), in USD. */
export type CostPerMillion = { d1: number; d1Storage: number; queues: number; r2: number; tail: number; agentSide: number; total: number };

/**
 * The marginal cost of one million events: no included usage and no base fee. D1 storage is charged for the hours an
 * event's rows are kept (`d1KeptHours`: the hot window), not a month; R2 for one month of history.
 */
export function costPerMillionEvents(per: PerEvent, d1KeptHours: number): CostPerMillion {
  const p = PRICES;
  const d1 = per.d1RowsWritten * p.d1.rowsWrittenPerMillion + per.d1RowsRead * p.d1.rowsReadPerMillion;
  const d1Storage = ((per.d1Bytes * 1e6) / GB) * p.d1.storagePerGbMonth * (Math.min(d1KeptHours, MONTH_HOURS) / MONTH_HOURS);
  const queues = per.queueOps * p.queues.opsPerMillion;
  const r2 = per.r2ClassA * p.r2.classAPerMillion + per.r2ClassB * p.r2.classBPerMillion + ((per.r2Bytes * 1e6) / GB) * p.r2.storagePerGbMonth;
  const tail = per.tailInvocations * p.workers.requestsPerMillion + per.tailCpuMs * p.workers.cpuMsPerMillion;
  const agentSide = per.agentRowsWritten * p.durableObjects.rowsWrittenPerMillion;
  return { d1, d1Storage, queues, r2, tail, agentSide, total: d1 + d1Storage + queues + r2 + tail + agentSide };
}

/**
 * Below either, a run is too short to project a month from: its rates still carry what a fleet pays once (a first
 * minute boundary, a table's first pages) and too few batches to average over.
 */
export const MIN_PROJECT_SECONDS = 60;
export const MIN_PROJECT_BATCHES = 30;

/** Why a run of `seconds` that took `batches` consumer batches cannot be projected to a month, or null when it can. */
export function projectionRefusal(seconds: number, batches: number): string | null {
  const why = [
    ...(seconds < MIN_PROJECT_SECONDS ? [`${seconds} s is under ${MIN_PROJECT_SECONDS} s`] : []),
    ...(batches < MIN_PROJECT_BATCHES ? [`${batches} consumer batches are under ${MIN_PROJECT_BATCHES}`] : []),
  ];
  return why.length ? `too short to project a month from (${why.join(", and ")})` : null;
}
