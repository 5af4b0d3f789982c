import { describe, expect, it } from "vitest";
import { costPerMillionEvents, MIN_PROJECT_BATCHES, MIN_PROJECT_SECONDS, monthlyBill, projectionRefusal } from "../../../bench/sim/cost";
import { cronRunsPerDay } from "../../../bench/sim/cron";
import { PRICES } from "../../../bench/sim/prices";

const zero = {
  d1RowsWritten: 0,
  d1RowsRead: 0,
  d1Bytes: 0,
  queueOps: 0,
  r2ClassA: 0,
  r2ClassB: 0,
  r2Bytes: 0,
  tailInvocations: 0,
  tailCpuMs: 0,
  agentRowsWritten: 0,
};

describe("the simulator's bill", () => {
  it("charges D1 rows written past the included ones at the list price, plus the plan's base fee as its own line", () => {
    // 1,000 agents x 10 events/min x 30 days = 432 M events, 1 row written each.
    const b = monthlyBill({ ...zero, d1RowsWritten: 1 }, 1_000, 10, 30);
    expect(b.events).toBe(432_000_000);
    expect(b.d1Written).toBeCloseTo(((432_000_000 - PRICES.d1.rowsWrittenIncluded) / 1e6) * PRICES.d1.rowsWrittenPerMillion, 6);
    expect(b.baseFee).toBe(5);
    expect(b.total).toBeCloseTo(b.d1Written + b.baseFee, 6);
  });

  it("holds D1 storage for the days kept, and charges only the base fee within the included usage", () => {
    const small = monthlyBill({ ...zero, d1Bytes: 1_000, queueOps: 3, tailInvocations: 1.29, tailCpuMs: 1, agentRowsWritten: 0.4 }, 1, 1, 30);
    expect(small.total).toBe(PRICES.workers.baseFeePerMonth);
    const b = monthlyBill({ ...zero, d1Bytes: 1_000 }, 1_000, 10, 7);
    expect(b.d1StorageGb).toBeCloseTo((1_000 * 432_000_000 * 7) / 30 / 1e9, 6);
  });

  it("bills tail invocations as Workers requests and CPU, and the outbox's agent rows at Durable Object SQLite's price", () => {
    // 432 M events: 1.29 invocations and 2 CPU ms each; 0.4 agent rows each.
    const b = monthlyBill({ ...zero, tailInvocations: 1.29, tailCpuMs: 2, agentRowsWritten: 0.4 }, 1_000, 10, 30);
    const requests = ((432e6 * 1.29 - PRICES.workers.requestsIncluded) / 1e6) * PRICES.workers.requestsPerMillion;
    const cpu = ((432e6 * 2 - PRICES.workers.cpuMsIncluded) / 1e6) * PRICES.workers.cpuMsPerMillion;
    expect(b.tail).toBeCloseTo(requests + cpu, 6);
    expect(b.agentSide).toBeCloseTo(((432e6 * 0.4 - PRICES.durableObjects.rowsWrittenIncluded) / 1e6) * PRICES.durableObjects.rowsWrittenPerMillion, 6);
    expect(b.total).toBeCloseTo(b.tail + b.agentSide + b.baseFee, 6);
  });

  it("prices a million events at the marginal list prices, every line named, without the base fee", () => {
    const c = costPerMillionEvents({ ...zero, d1RowsWritten: 2, queueOps: 3, tailInvocations: 1.29, tailCpuMs: 2, agentRowsWritten: 0.4 }, 48);
    expect(c.d1).toBeCloseTo(2 * PRICES.d1.rowsWrittenPerMillion, 9);
    expect(c.queues).toBeCloseTo(3 * PRICES.queues.opsPerMillion, 9);
    expect(c.tail).toBeCloseTo(1.29 * PRICES.workers.requestsPerMillion + 2 * PRICES.workers.cpuMsPerMillion, 9);
    expect(c.agentSide).toBeCloseTo(0.4 * PRICES.durableObjects.rowsWrittenPerMillion, 9);
    expect(c.total).toBeCloseTo(c.d1 + c.queues + c.tail + c.agentSide, 9);
  });

  it("charges an event's D1 bytes for the hours it is kept, not a month", () => {
    const hot = costPerMillionEvents({ ...zero, d1Bytes: 500 }, 48);
    const month = costPerMillionEvents({ ...zero, d1Bytes: 500 }, 720);
    // 500 MB per million events for a month at the GB-month price; 48 h is 48/720 of it.
    expect(month.d1Storage).toBeCloseTo(0.5 * PRICES.d1.storagePerGbMonth, 9);
    expect(hot.d1Storage).toBeCloseTo((month.d1Storage * 48) / 720, 9);
  });

  it("refuses to project a month from a run under a minute or under its batch count, and says why", () => {
    expect(projectionRefusal(20, 500)).toMatch(/20 s is under 60 s/);
    expect(projectionRefusal(600, 5)).toMatch(/5 consumer batches are under 30/);
    expect(projectionRefusal(5, 2)).toMatch(/5 s is under 60 s, and 2 consumer batches/);
    expect(projectionRefusal(MIN_PROJECT_SECONDS, MIN_PROJECT_BATCHES)).toBeNull();
  });

  it("counts a cron's runs per day from its minute and hour fields", () => {
    expect(cronRunsPerDay("17 * * * *")).toBe(24);
    expect(cronRunsPerDay("*/5 * * * *")).toBe(288);
    expect(cronRunsPerDay("0 3 * * *")).toBe(1);
  });
});
