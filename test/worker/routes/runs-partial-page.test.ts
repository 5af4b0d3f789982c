import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { COMPLETED_SCAN_CAP } from "../../../src/store/read-models/runs";
import { handleTelemetryBatch } from "../../../worker/ingest/consumer";
import { makeEvent } from "../../fixtures/events";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, hrefs } from "../html";
import { call } from "./harness";

beforeAll(() => publishEnvTeamKeys());

/** Runs through the real consumer (D1 only): `completed` runs first (the oldest), then `failed` newer ones. */
async function ingest(agentName: string, completed: number, failed: number): Promise<void> {
  const events: TelemetryEvent[] = [];
  const run = (fiberId: string, end: "fiber.completed" | "fiber.failed") => {
    const corr = { fiberId };
    events.push(makeEvent("fiber.started", { fiberName: "etl" }, { agentName, corr }));
    events.push(
      end === "fiber.completed"
        ? makeEvent("fiber.completed", { fiberName: "etl" }, { agentName, corr })
        : makeEvent("fiber.failed", { fiberName: "etl", error: "boom" }, { agentName, corr }),
    );
  };
  for (let i = 0; i < completed; i++) run(`done-${i}`, "fiber.completed");
  for (let i = 0; i < failed; i++) run(`bad-${i}`, "fiber.failed");
  const batch = createMessageBatch(
    "agent-telemetry",
    events.map((body, i) => ({ id: `${agentName}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  // Without the R2 history bound, D1 keeps completed runs too: this is the D1 scan for them (a console with the history
  // lets healthy completed runs leave D1; what completed but went wrong on the way still stays, and is scanned so).
  await handleTelemetryBatch(batch, { ...env, HISTORY: undefined, RETENTION_PACE: "0" });
  expect((await getQueueResult(batch, createExecutionContext())).ackAll).toBe(true);
}

describe("the completed-runs page where few runs completed", () => {
  it("pages on past what one page may read, says so on each short page, and lists every completed run in the end", async () => {
    // The newest runs are failed ones, more than one page may read: the first page finds no completed run.
    await ingest(`sparse-${crypto.randomUUID().slice(0, 8)}`, 3, COMPLETED_SCAN_CAP + 20);
    const found: string[] = [];
    let path: string | null = "/runs?outcome=completed";
    let pages = 0;
    while (path) {
      const html = await (await call(path, { as: "viewer" })).text();
      pages++;
      const runLinks = hrefs(html).filter((h) => /^\/runs\/(done|bad)-/.test(h));
      expect(runLinks.filter((h) => h.startsWith("/runs/bad-"))).toEqual([]);
      found.push(...new Set(runLinks.map((h) => h.split(/[/?]/)[2]!)));
      const partial = byTestId(html, "list-partial");
      if (pages === 1) {
        // Nothing completed among what the first page read: it says so, and does not claim that no run matches.
        expect(partial?.text).toContain("None in the runs this page read");
        expect(html).not.toContain("No runs match.");
      }
      const nav = html.match(/<a href="([^"]+)" rel="next"/);
      path = nav ? nav[1]!.replace(/&amp;/g, "&") : null;
      if (!path) expect(partial).toBeUndefined();
      expect(pages).toBeLessThan(10);
    }
    expect(pages).toBeGreaterThan(1);
    expect(found.sort()).toEqual(["done-0", "done-1", "done-2"]);
  });
});
