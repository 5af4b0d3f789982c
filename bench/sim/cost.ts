import { PRICES } from "./prices";

/**
 * A monthly bill from measured per-event figures, at the list prices in prices.ts (Workers Paid, included usage
 * subtracted). Storage is the steady state: D1 holds `d1DaysKept` days of events; R2 is taken after one month
 * of history (it grows by that much every month it is kept).
 */

/** What one event costs, as the simulator measured it. */
export type PerEvent = {
  d1RowsWritten: number;
  d1RowsRead: number;
  d1Bytes: number;
  /** Queue operations: write + read + delete per 64 KB of each message, per event. */
  queueOps: number;
  r2ClassA: number;
  r2ClassB: number;
  r2Bytes: number;
};

export type MonthlyBill = {
  events: number;
  d1Written: number;
  d1Read: number;
  d1Storage: number;
  d1StorageGb: number;
  queues: number;
  r2: number;
  total: number;
};

const MONTH_DAYS = 30;
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
  return { events, d1Written, d1Read, d1Storage, d1StorageGb, queues, r2, total: d1Written + d1Read + d1Storage + queues + r2 };
}

/** The marginal cost of one million events (no included usage; storage for one month of them), in USD. */
export function costPerMillionEvents(per: PerEvent): number {
  const p = PRICES;
  return (
    per.d1RowsWritten * p.d1.rowsWrittenPerMillion +
    per.d1RowsRead * p.d1.rowsReadPerMillion +
    ((per.d1Bytes * 1e6) / GB) * p.d1.storagePerGbMonth +
    per.queueOps * p.queues.opsPerMillion +
    per.r2ClassA * p.r2.classAPerMillion +
    per.r2ClassB * p.r2.classBPerMillion +
    ((per.r2Bytes * 1e6) / GB) * p.r2.storagePerGbMonth
  );
}
