import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ingestBatch } from "../../../worker/ingest/consumer";
import { reconcileStale } from "../../../worker/reconcile/pass";
import { makeEvent } from "../../fixtures/events";
import { pollRows } from "../../helpers";

// An agent the console cannot ask (here TelemetryOnlyAgent: a real agents-SDK Agent without the admin package, as a
// tail-captured Worker's agents are): a run whose end never arrives must not show "running" forever. Past the stated
// age it is "unknown", saying why; its real end, if it ever arrives, supersedes that.

const MIN = 60_000;
const uid = () => crypto.randomUUID().slice(0, 8);
type RunRow = { outcome: string | null; reason: string | null };
const runOf = (name: string, fiberId: string) =>
  env.DB.prepare("SELECT outcome, reason FROM runs WHERE agent_name = ? AND fiber_id = ?").bind(name, fiberId).first<RunRow>();
const ingest = (events: ReturnType<typeof makeEvent>[]) =>
  ingestBatch(
    env.DB,
    events.map((e) => ({ id: `m-${e.id}`, body: JSON.stringify(e) })),
  );
const started = (name: string, fiberId: string, time: number) =>
  ({
    ...makeEvent("fiber.started", { fiberName: "import", managed: false }, { agentName: name, corr: { fiberId }, time }),
    source: { agentClass: "TelemetryOnlyAgent", agentName: name },
  }) as ReturnType<typeof makeEvent>;

describe("runs of an agent the console cannot ask", () => {
  it("are shown as unknown once silent past RECONCILE_UNKNOWN_AFTER_MINUTES, not before, and a late real end supersedes it", async () => {
    const name = `unaskable-${uid()}`;
    const now = Date.now();
    await ingest([started(name, "old", now - 90 * MIN), started(name, "recent", now - 20 * MIN)]);

    const pass = await reconcileStale(env, { afterMs: 10 * MIN, batch: 100, unknownAfterMs: 60 * MIN }, now);
    const mine = pass.find((p) => p.target.agentName === name)!;
    expect(mine.error).toBe("TelemetryOnlyAgent has no admin mixin (withAdminRpc)");
    expect(mine.findings.map((f) => f.type === "run.reconciled" && [f.runId, f.finding])).toEqual([["old", "unknown"]]);

    const shown = await pollRows<RunRow>(
      "SELECT outcome, reason FROM runs WHERE agent_name = ? AND fiber_id = 'old' AND outcome IS NOT NULL",
      [name],
      (r) => r.length === 1,
    );
    expect(shown[0]).toEqual({
      outcome: "unknown",
      reason:
        "no event for 60 min and the agent cannot be asked (TelemetryOnlyAgent has no admin mixin (withAdminRpc)): whether it still runs, and how it ended, is not known",
    });
    // Younger than the stated age: still open, as the events left it.
    expect(await runOf(name, "recent")).toEqual({ outcome: null, reason: null });

    // The end arrives after all (a resent item, a late Queue delivery): what happened outranks "not known".
    const end = {
      ...makeEvent("fiber.completed", { fiberName: "import", managed: false }, { agentName: name, corr: { fiberId: "old" }, time: now - 89 * MIN }),
      source: { agentClass: "TelemetryOnlyAgent", agentName: name },
    } as ReturnType<typeof makeEvent>;
    await ingest([end]);
    expect(await runOf(name, "old")).toMatchObject({ outcome: "completed" });
  });
});
