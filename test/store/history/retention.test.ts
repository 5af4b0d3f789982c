import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DAY_MS, datePrefix } from "../../../src/store/history/layout";
import { runHistoryRetention } from "../../../src/store/history/retention";
import worker from "../../../worker/index";
import { writeHistory } from "../../../worker/ingest/history";
import { makeEvent } from "../../fixtures/events";

const bucket = () => env.HISTORY!;
const NOW = Date.UTC(2027, 0, 15, 12, 30);
const day = (t: number) => Math.floor(t / DAY_MS) * DAY_MS;
/** Objects on a UTC day (three agents, two hours: several objects). */
async function fill(dayStart: number, tag: string) {
  const events = Array.from({ length: 6 }, (_, i) =>
    makeEvent("session.status_idle", {}, { agentName: `ret-${tag}-${i % 3}`, time: dayStart + (i % 2) * 13 * 3_600_000 + i }),
  );
  await writeHistory(bucket(), events, { shards: 4, receivedAt: NOW });
}
const objectsOn = async (dayStart: number) => (await bucket().list({ prefix: datePrefix(dayStart) })).objects.length;

describe("history retention (R2)", () => {
  it("deletes whole days older than the cutoff and keeps the day the cutoff falls in", async () => {
    const cutoff = NOW - 30 * DAY_MS;
    const days = { expired2: day(cutoff) - 2 * DAY_MS, expired1: day(cutoff) - DAY_MS, cutoffDay: day(cutoff), kept: day(cutoff) + DAY_MS };
    for (const [tag, d] of Object.entries(days)) await fill(d, tag);
    for (const d of Object.values(days)) expect(await objectsOn(d)).toBeGreaterThan(0);

    const r = await runHistoryRetention(bucket(), { maxAgeDays: 30, now: NOW });
    expect(r.complete).toBe(true);
    // The bucket is shared with other test files (one runtime per worker): days they wrote before the cutoff go too.
    const iso = (d: number) => new Date(d).toISOString().slice(0, 10);
    expect(r.daysDeleted).toEqual(expect.arrayContaining([iso(days.expired2), iso(days.expired1)]));
    expect(r.daysDeleted).not.toContain(iso(days.cutoffDay));
    expect(r.daysDeleted).not.toContain(iso(days.kept));
    expect(await objectsOn(days.expired2)).toBe(0);
    expect(await objectsOn(days.expired1)).toBe(0);
    expect(await objectsOn(days.cutoffDay)).toBeGreaterThan(0);
    expect(await objectsOn(days.kept)).toBeGreaterThan(0);
    expect(r.objectsDeleted).toBeGreaterThan(0);

    // Nothing left to do: one list call, nothing deleted.
    const again = await runHistoryRetention(bucket(), { maxAgeDays: 30, now: NOW });
    expect(again).toMatchObject({ daysDeleted: [], objectsDeleted: 0, lists: 1, complete: true });
  });

  it("stops at its step budget and the next run finishes the job", async () => {
    const base = day(NOW - 200 * DAY_MS);
    for (let i = 0; i < 3; i++) await fill(base - i * DAY_MS, `budget${i}`);
    const first = await runHistoryRetention(bucket(), { maxAgeDays: 100, now: NOW, maxSteps: 3 });
    expect(first.complete).toBe(false);
    expect(first.lists).toBe(3);
    expect(first.daysDeleted).toHaveLength(2);
    const second = await runHistoryRetention(bucket(), { maxAgeDays: 100, now: NOW, maxSteps: 3 });
    expect(second.complete).toBe(true);
    for (let i = 0; i < 3; i++) expect(await objectsOn(base - i * DAY_MS)).toBe(0);
  });

  it("runs from the hourly cron with HISTORY_RETENTION_DAYS (400 in wrangler.jsonc)", async () => {
    const now = Date.now();
    const expired = day(now - 402 * DAY_MS);
    const inside = day(now - 398 * DAY_MS);
    await fill(expired, "cron-old");
    await fill(inside, "cron-new");
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ cron: "17 * * * *", scheduledTime: now }), env, ctx);
    await waitOnExecutionContext(ctx);
    expect(await objectsOn(expired)).toBe(0);
    expect(await objectsOn(inside)).toBeGreaterThan(0);
  });
});
