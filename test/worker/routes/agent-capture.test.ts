import { env } from "cloudflare:workers";
import type { TailItem } from "@agent-oncall/telemetry/tail";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../../worker/env";
import { handleTail } from "../../../worker/tail";
import { listenLikeATail } from "../../diagnostics-tail";
import { pollRows } from "../../helpers";
import { truthStub } from "../../truth/drive";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, mustTestId } from "../html";
import { getText, uid } from "./harness";

// An agent's page says how its events reach the console (issue 34, Deliver 5): its Worker's tail, its telemetry
// outbox, or both, and what that path can lose, so an on-call engineer reads a quiet page for what it is.

const enc = encodeURIComponent;
const tail = listenLikeATail();
afterAll(() => tail.stop());
beforeAll(async () => {
  await publishEnvTeamKeys();
});

/** Hands the console's tail handler what the tail heard of this one agent (other files' agents are left out). */
async function tailDeliver(agentClass: string, agentName: string): Promise<void> {
  await tail.quiet();
  const item: TailItem = tail.item();
  tail.clear();
  const mine = (item.diagnosticsChannelEvents ?? []).filter((e) => {
    const m = e.message as { agent?: unknown; name?: unknown } | undefined;
    return m?.agent === agentClass && m.name === agentName;
  });
  expect(mine.length, "the agent published SDK messages").toBeGreaterThan(0);
  await handleTail([{ ...item, diagnosticsChannelEvents: mine }], env as Env);
  await pollRows("SELECT 1 FROM tail_objects WHERE agent_class = ? AND agent_name = ?", [agentClass, agentName], (r) => r.length === 1);
}

async function capturePaths(agentClass: string, agentName: string) {
  const res = await getText(`/agents/${agentClass}/${enc(agentName)}`, "viewer");
  expect(res.status).toBe(200);
  return { notice: mustTestId(res.text, "capture-paths"), html: res.text };
}

describe("an agent's page says how its events arrive", () => {
  it("from its Worker's tail alone: no package needed, what the path can lose, and no second notice about numbers", async () => {
    const name = `capture-tail-${uid()}`;
    const stub = await truthStub("AdminTruthFiberAgent", name);
    await stub.startRunFiber("complete");
    await tailDeliver("AdminTruthFiberAgent", name);
    await pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", ["AdminTruthFiberAgent", name], (r) => r.length === 1);

    const { notice, html } = await capturePaths("AdminTruthFiberAgent", name);
    expect(notice.attrs["data-paths"]).toBe("tail");
    expect(notice.text).toContain("Its events arrive from its Worker's tail");
    expect(notice.text).toContain("no package of ours is needed to observe it");
    expect(notice.text).toContain("an event lost in transport cannot be counted");
    expect(notice.text).toContain("shown as unknown after a stated age and counted as a possible loss");
    // The capture notice already says why the events are unnumbered: the gap notice does not repeat it.
    expect(byTestId(html, "event-gap-unknown")).toBeUndefined();
    await stub.retire().catch(() => {});
  });

  it("from its telemetry outbox, numbered; then from both once its Worker's tail carries them too", async () => {
    const name = `capture-outbox-${uid()}`;
    const stub = await truthStub("TruthFiberAgent", name);
    await stub.startRunFiber("complete");
    await stub.settleTelemetry();
    await pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ? AND seq_max IS NOT NULL", ["TruthFiberAgent", name], (r) => r.length === 1);

    const outbox = await capturePaths("TruthFiberAgent", name);
    expect(outbox.notice.attrs["data-paths"]).toBe("outbox");
    expect(outbox.notice.text).toContain("Its events arrive from its telemetry outbox");
    expect(outbox.notice.text).toContain("Its Worker's tail has not carried any of them.");

    // The same agent's SDK messages, as its Worker's tail carries them.
    await tailDeliver("TruthFiberAgent", name);
    const both = await capturePaths("TruthFiberAgent", name);
    expect(both.notice.attrs["data-paths"]).toBe("tail outbox");
    expect(both.notice.text).toContain("from its Worker's tail");
    expect(both.notice.text).toContain("and from its telemetry outbox; each event is stored once.");
    await stub.retire().catch(() => {});
  });
});
