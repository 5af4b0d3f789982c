import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { ingestBatch } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";

/**
 * Reconciliation's "the session's end was not reported" is an observation; an event says what happened. Whatever
 * order they arrive in (a resent idle event can come in the same batch as the finding, or after it), the event
 * from after the last one the finding judged decides the session's status.
 */
const uid = () => crypto.randomUUID().slice(0, 8);
const statusOf = async (name: string) =>
  (await env.DB.prepare("SELECT status FROM sessions WHERE session_name = ?").bind(name).first<{ status: string }>())?.status;
const ingest = (events: TelemetryEvent[]) =>
  ingestBatch(
    env.DB,
    events.map((e) => ({ id: `m-${e.id}`, body: JSON.stringify(e) })),
  );

function life(name: string) {
  const t = Date.now() - 60 * 60_000;
  const opts = (time: number) => ({ agentName: name, corr: { sessionName: name }, time });
  return {
    running: makeEvent("session.status_running", { turnSeq: 1 }, opts(t)),
    idle: makeEvent("session.status_idle", { turnSeq: 1 }, opts(t + 5_000)),
    // Found later, having seen the running event as the last one.
    finding: makeEvent("session.reconciled", { finding: "ended_unreported", detail: "the agent reports idle", lastEventAt: t }, opts(t + 600_000)),
    resumed: makeEvent("session.status_running", { turnSeq: 2 }, opts(t + 900_000)),
  };
}

describe("a session's status: what happened outranks 'its end was not reported'", () => {
  it("with nothing else known, the finding is the status", async () => {
    const s = life(`sf-${uid()}`);
    await ingest([s.running]);
    await ingest([s.finding]);
    expect(await statusOf(s.running.corr.sessionName!)).toBe("ended_unreported");
  });

  it("a resent idle event in the same batch as the finding, or after it, is the status", async () => {
    const a = life(`sf-${uid()}`);
    await ingest([a.running]);
    await ingest([a.finding, a.idle]);
    expect(await statusOf(a.running.corr.sessionName!)).toBe("idle");

    const b = life(`sf-${uid()}`);
    await ingest([b.running]);
    await ingest([b.finding]);
    await ingest([b.idle]);
    expect(await statusOf(b.running.corr.sessionName!)).toBe("idle");

    const c = life(`sf-${uid()}`);
    await ingest([c.running, c.idle]);
    await ingest([c.finding]);
    expect(await statusOf(c.running.corr.sessionName!)).toBe("idle");
  });

  it("a session that runs again after the finding is running", async () => {
    const s = life(`sf-${uid()}`);
    await ingest([s.running, s.finding, s.resumed]);
    expect(await statusOf(s.running.corr.sessionName!)).toBe("running");
  });
});
