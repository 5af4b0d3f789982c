import { jsx } from "hono/jsx";
import { describe, expect, it } from "vitest";
import { ActionResult } from "../../../console/components/actions";
import { forceIdleOutput, statusOutput } from "../../../src/admin-rpc/contract";
import { findAll, mustTestId } from "../../worker/html";

// The console reads agents on the previous admin contract too: a mixin before contract 6 answers force idle with
// sentences (`detail` per run, a `notice`). They pass the contract and are shown as they are; a new mixin's facts
// are worded by the console, with their codes on the elements.

const status = statusOutput.parse({ status: "running", runCount: 1, nextAlarm: null, schedules: [], pendingScheduleCount: 0, chatRecoveryIncidents: [] });

async function render(answer: unknown): Promise<string> {
  const forceIdle = forceIdleOutput.parse(answer);
  return String(await jsx(ActionResult, { ok: false, action: "force_idle", title: "Force idle done.", detail: "", forceIdle }).toString());
}

const base = { noop: false, before: status, after: { ...status, runCount: 0 }, abortedRuns: ["f-1"], cancelledFibers: [], clearedIncidents: [] };

describe("force idle's result from either contract", () => {
  it("shows an older mixin's sentences as they are", async () => {
    const html = await render({
      ...base,
      evicted: false,
      notice: "1 run (ticker) still runs in memory: as the old mixin said it.",
      ended: [{ kind: "fiber", runId: "f-1", name: "ticker", stopped: false, how: "still_running", detail: "still running in memory: the old words" }],
    });
    expect(mustTestId(html, "force-idle-notice").text).toBe("1 run (ticker) still runs in memory: as the old mixin said it.");
    expect(findAll(html, "data-run", "f-1")[0]!.text).toContain("still running in memory: the old words");
  });

  it("words a new mixin's facts, with the codes on the elements", async () => {
    const html = await render({
      ...base,
      evicted: false,
      notice: { code: "unstopped", cause: "no_hook" },
      ended: [{ kind: "fiber", runId: "f-1", name: "ticker", stopped: false, how: "still_running", why: "unstoppable" }],
    });
    const notice = mustTestId(html, "force-idle-notice");
    expect(notice.attrs["data-cause"]).toBe("no_hook");
    expect(notice.text).toMatch(/^1 run \(ticker\) still runs in memory: /);
    const run = findAll(html, "data-run", "f-1")[0]!;
    expect(run.attrs["data-why"]).toBe("unstoppable");
    expect(run.text).toContain("nothing could stop it");
  });
});
