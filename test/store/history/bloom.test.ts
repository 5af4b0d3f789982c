import { describe, expect, it } from "vitest";
import { bloomMayHold, bloomOf, MAX_BLOOM_BITS } from "../../../src/store/history/bloom";

describe("the objects' Bloom filter", () => {
  it("never misses an item it holds, and rules out ~99% of others at the sizes a batch uses", () => {
    for (const n of [1, 50, 400, 1_600]) {
      const items = Array.from({ length: n }, (_, i) => `requestId:req-${n}-${i}`);
      const f = bloomOf(items);
      expect(items.every((it) => bloomMayHold(f, it))).toBe(true);
      const others = Array.from({ length: 5_000 }, (_, i) => `requestId:other-${n}-${i}`);
      const fp = others.filter((it) => bloomMayHold(f, it)).length / others.length;
      // At most MAX_BLOOM_BITS: 1,600 items get 10 bits each.
      expect(fp).toBeLessThan(0.02);
      expect(atob(f).length * 8).toBeLessThanOrEqual(MAX_BLOOM_BITS);
    }
  });

  it("says 'may hold' for a filter it cannot read, so a reader fetches rather than misses", () => {
    expect(bloomMayHold("not base64!", "x")).toBe(true);
    expect(bloomMayHold(btoa("abc"), "x")).toBe(true);
  });
});
