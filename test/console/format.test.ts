import { describe, expect, it } from "vitest";
import { ago, bytes, capped, count, duration, elapsed, iso } from "../../console/format";

// Whatever number D1 holds, formatting answers a readable string and never throws: one stored event with
// time 9e15 (beyond what a Date can hold) used to take the overview and the incident pages down for good.

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const ODD = [9e15, -9e15, 1e300, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];

describe("iso", () => {
  it("formats a time as UTC without milliseconds, and no time as a dash", () => {
    expect(iso(NOW + 123)).toBe("2026-11-21T12:00:00Z");
    expect(iso(null)).toBe("—");
    expect(iso(undefined)).toBe("—");
  });

  it.each(ODD)("marks %s as an invalid time, quoting the stored value", (t) => {
    expect(iso(t)).toBe(`invalid time (${String(t)})`);
  });

  it("keeps the edges a Date can still hold", () => {
    expect(iso(8.64e15)).toBe("+275760-09-13T00:00:00Z");
    expect(iso(8.64e15 + 1)).toBe("invalid time (8640000000000001)");
  });

  it("never throws on a value of the wrong type (a row written by hand)", () => {
    expect(iso("2026-01-01" as unknown as number)).toBe("invalid time (2026-01-01)");
  });
});

describe("ago", () => {
  it("says how long ago, and how far ahead for a time in the future", () => {
    expect(ago(NOW - 5_000, NOW)).toBe("5s ago");
    expect(ago(NOW - 3 * 3600_000, NOW)).toBe("3h ago");
    expect(ago(NOW + 10_000, NOW)).toBe("0s ago"); // clock skew reads as now
    expect(ago(NOW + 4 * 60_000, NOW)).toBe("in 4m");
    expect(ago(null, NOW)).toBe("—");
  });

  it.each(ODD)("marks %s as an invalid time", (t) => {
    expect(ago(t, NOW)).toBe(`invalid time (${String(t)})`);
  });
});

describe("duration and elapsed", () => {
  it("formats durations, negative ones with a sign (an overdue alarm)", () => {
    expect(duration(850)).toBe("850ms");
    expect(duration(250_000)).toBe("4m 10s");
    expect(duration(-12_000)).toBe("-12s");
    expect(duration(9e15)).toBe("2500000000h 0m");
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY])("marks %s as an invalid duration", (ms) => {
    expect(duration(ms)).toBe(`invalid duration (${String(ms)})`);
  });

  it("is a dash when either end is not a time", () => {
    expect(elapsed(NOW - 61_000, NOW)).toBe("1m 1s");
    expect(elapsed(9e15, NOW)).toBe("—");
    expect(elapsed(NOW, Number.NaN)).toBe("—");
  });
});

describe("bytes", () => {
  it("formats sizes and marks impossible ones", () => {
    expect(bytes(812)).toBe("812 B");
    expect(bytes(4300)).toBe("4.2 KB");
    expect(bytes(-1)).toBe("invalid size (-1)");
    expect(bytes(Number.NaN)).toBe("invalid size (NaN)");
  });
});

describe("count", () => {
  it("groups thousands the same way for every reader: 3,070,630", () => {
    expect(count(3_070_630)).toBe("3,070,630");
    expect(count(999)).toBe("999");
    expect(count(1000)).toBe("1,000");
    expect(count(0)).toBe("0");
    expect(count(-12_345)).toBe("-12,345");
    // A rate shown as a count is a whole number.
    expect(count(1234.6)).toBe("1,235");
  });

  it("says a capped count is at least that many, grouped too", () => {
    expect(capped({ n: 1000, capped: true })).toBe("≥1,000");
    expect(capped({ n: 42, capped: false })).toBe("42");
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, "12" as unknown as number])("marks %s as not a count, and never throws", (n) => {
    expect(count(n)).toBe(`invalid count (${String(n)})`);
  });

  it("shows no value as a dash", () => {
    expect(count(null)).toBe("—");
    expect(count(undefined)).toBe("—");
  });
});
