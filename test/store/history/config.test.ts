import { describe, expect, it } from "vitest";
import { DEFAULT_HISTORY_RETENTION_DAYS, DEFAULT_HISTORY_SHARDS, historyConfig } from "../../../src/store/history/config";

describe("history settings", () => {
  it("reads the shard count, earlier counts and retention, with defaults when unset", () => {
    expect(historyConfig({})).toEqual({ shards: DEFAULT_HISTORY_SHARDS, previousShards: [], retentionDays: DEFAULT_HISTORY_RETENTION_DAYS, problems: [] });
    expect(historyConfig({ HISTORY_SHARDS: "16", HISTORY_PREVIOUS_SHARDS: "4, 8,16", HISTORY_RETENTION_DAYS: " 90 " })).toEqual({ shards: 16, previousShards: [4, 8], retentionDays: 90, problems: [] });
  });

  it("names a bad setting; a bad retention deletes nothing, a bad shard count keeps the default", () => {
    const c = historyConfig({ HISTORY_SHARDS: "0", HISTORY_RETENTION_DAYS: "a year", HISTORY_PREVIOUS_SHARDS: "4,x" });
    expect(c.shards).toBe(DEFAULT_HISTORY_SHARDS);
    expect(c.retentionDays).toBeNull();
    expect(c.previousShards).toEqual([]);
    expect(c.problems).toEqual([
      "HISTORY_SHARDS must be a whole number from 1 to 256",
      "each of HISTORY_PREVIOUS_SHARDS must be a whole number from 1 to 256",
      "HISTORY_RETENTION_DAYS must be a whole number from 1 to 36500",
    ]);
  });
});
