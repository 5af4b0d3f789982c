import { describe, expect, it } from "vitest";
import { costPerMillionEvents, monthlyBill } from "../../../bench/sim/cost";
import { cronRunsPerDay } from "../../../bench/sim/cron";
import { PRICES } from "../../../bench/sim/prices";

const zero = { d1RowsWritten: 0, d1RowsRead: 0, d1Bytes: 0, queueOps: 0, r2ClassA: 0, r2ClassB: 0, r2Bytes: 0 };

describe("the simulator's bill", () => {
  it("charges D1 rows written past the included ones at the list price", () => {
    // 1,000 agents x 10 events/min x 30 days = 432 M events, 1 row written each.
    const b = monthlyBill({ ...zero, d1RowsWritten: 1 }, 1_000, 10, 30);
    expect(b.events).toBe(432_000_000);
    expect(b.d1Written).toBeCloseTo(((432_000_000 - PRICES.d1.rowsWrittenIncluded) / 1e6) * PRICES.d1.rowsWrittenPerMillion, 6);
    expect(b.total).toBeCloseTo(b.d1Written, 6);
  });

  it("holds D1 storage for the days kept, and charges nothing within the included usage", () => {
    const small = monthlyBill({ ...zero, d1Bytes: 1_000, queueOps: 3 }, 1, 1, 30);
    expect(small.total).toBe(0);
    const b = monthlyBill({ ...zero, d1Bytes: 1_000 }, 1_000, 10, 7);
    expect(b.d1StorageGb).toBeCloseTo((1_000 * 432_000_000 * 7) / 30 / 1e9, 6);
  });

  it("prices a million events at the marginal list prices", () => {
    expect(costPerMillionEvents({ ...zero, d1RowsWritten: 2, queueOps: 3 })).toBeCloseTo(
      2 * PRICES.d1.rowsWrittenPerMillion + 3 * PRICES.queues.opsPerMillion,
      9,
    );
  });

  it("counts a cron's runs per day from its minute and hour fields", () => {
    expect(cronRunsPerDay("17 * * * *")).toBe(24);
    expect(cronRunsPerDay("*/5 * * * *")).toBe(288);
    expect(cronRunsPerDay("0 3 * * *")).toBe(1);
  });
});
