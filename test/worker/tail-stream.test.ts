import { env } from "cloudflare:workers";
import { captureFromTail, type TailItem } from "@agent-oncall/telemetry/tail";
import { describe, expect, it, vi } from "vitest";
import type { Env } from "../../worker/env";
import { STREAM_FLUSH_MAX } from "../../worker/stream-flush";
import { handleTail } from "../../worker/tail";
import { type StreamTally, streamTail } from "../../worker/tail-stream";
import { pollRows, pollRunRows } from "../helpers";

/** The flush these tests run at (STREAM_FLUSH_SECONDS): shorter than the default, so a test waits seconds, not tens. */
const STREAM_FLUSH_MS = 2_000;
const streamEnv = Object.assign(Object.create(env), { STREAM_FLUSH_SECONDS: String(STREAM_FLUSH_MS / 1000) }) as Env;

type Msg = { type: string; payload: Record<string, unknown> };

/** A streamed invocation of one agent, driven as the runtime drives a streaming Tail Worker: onset, events, outcome. */
function stream(name: string, opts: { info?: TailStream.Onset["info"]; env?: Env; report?: "default" } = {}) {
  const start = new Date(Date.now() - 1_000);
  const objectId = crypto.randomUUID().replace(/-/g, "");
  const tallies: StreamTally[] = [];
  const waits: Promise<unknown>[] = [];
  const ctx = { waitUntil: (p: Promise<unknown>) => waits.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
  let sequence = 0;
  const ev = <E extends TailStream.EventType>(event: E): TailStream.TailEvent<E> => ({
    invocationId: "inv-1",
    spanContext: { traceId: "t-1" },
    timestamp: new Date(),
    sequence: sequence++,
    event,
  });
  const onset = ev<TailStream.Onset>({
    type: "onset",
    spanId: "s-1",
    executionModel: "durableObject",
    durableObjectId: objectId,
    entrypoint: "TailedAgent",
    info: opts.info ?? { type: "jsrpc" },
  });
  onset.timestamp.setTime(start.getTime());
  // "default": the handler's own report (its log lines), as the Worker registers it.
  const h = opts.report === "default" ? streamTail(onset, opts.env ?? streamEnv, ctx) : streamTail(onset, opts.env ?? streamEnv, ctx, (t) => tallies.push(t));
  const published: { timestamp: number; channel: string; message: unknown }[] = [];
  return {
    objectId,
    tallies,
    /** The agent publishes one SDK message: the runtime hands it to the stream. */
    publish: async (m: Msg) => {
      const message = { ...m, agent: "TailedAgent", name, timestamp: start.getTime() };
      const channel = `agents:${m.type.split(":")[0]}`;
      published.push({ timestamp: start.getTime(), channel, message });
      await h.diagnosticChannel!(ev<TailStream.DiagnosticChannelEvent>({ type: "diagnosticChannel", channel, message }));
    },
    dropped: async (count: number) => {
      await h.streamDiagEvent!(ev<TailStream.StreamDiagnostic>({ type: "streamDiagnostic", diagnostic: { diagnosticsType: "droppedEvents", count } }));
    },
    end: async () => {
      await h.outcome!(ev<TailStream.Outcome>({ type: "outcome", outcome: "ok", cpuTime: 1, wallTime: 1 }));
      await Promise.all(waits);
    },
    /** The classic trace item of the same invocation, as `tail()` would receive it once it ended. */
    classic: (): TailItem => ({
      scriptName: null,
      durableObjectId: objectId,
      eventTimestamp: start.getTime(),
      entrypoint: "TailedAgent",
      truncated: false,
      diagnosticsChannelEvents: published,
    }),
  };
}

const fiber = (type: string, fiberId: string, extra: Record<string, unknown> = {}): Msg => ({
  type,
  payload: { fiberId, fiberName: "export", managed: false, ...extra },
});
const eventIds = async (name: string) =>
  (await env.DB.prepare("SELECT id FROM events WHERE agent_name = ? ORDER BY id").bind(name).all<{ id: string }>()).results.map((r) => r.id);

describe("the console's streaming tail handler", () => {
  it("stores a runFiber's start while its invocation still runs, with the ids the classic tail gives, so both ways store it once", async () => {
    const name = `streamed-${crypto.randomUUID().slice(0, 8)}`;
    const s = stream(name);
    await s.publish(fiber("fiber:run:started", "f-long"));
    // No outcome yet: the invocation is still running, and its start is in the store all the same.
    const running = await pollRunRows<{ fiber_id: string; outcome: string | null }>(
      name,
      () => true,
      (rs) => rs.length === 1,
      STREAM_FLUSH_MS + 10_000,
    );
    // A run still running has no outcome yet.
    expect(running.map((r) => ({ fiber_id: r.fiber_id, outcome: r.outcome }))).toEqual([{ fiber_id: "f-long", outcome: null }]);
    await s.publish(fiber("fiber:run:completed", "f-long", { elapsedMs: 40_000 }));
    await s.end();
    expect(s.tallies).toEqual([expect.objectContaining({ flushes: 2, entries: 2, sent: 2, losses: 0, sendFailed: 0 })]);
    await pollRunRows<{ outcome: string }>(
      name,
      () => true,
      (rs) => rs[0]?.outcome === "completed",
    );
    // The classic tail's reading of the same invocation gives the very ids the stream stored.
    const classic = captureFromTail([s.classic()])
      .events.map((e) => e.id)
      .sort();
    await pollRows("SELECT id FROM events WHERE agent_name = ?", [name], (rs) => rs.length === 2);
    expect(await eventIds(name)).toEqual(classic);
    // Tailed both ways: the classic item arrives too, and nothing is stored twice.
    await handleTail([s.classic()], env as Env);
    await scheduler.wait(1500);
    expect(await eventIds(name)).toEqual(classic);
  });

  it("reads a recovery hook's messages split across flushes as one invocation: the run it started is the resumed work", async () => {
    const name = `split-${crypto.randomUUID().slice(0, 8)}`;
    const before = stream(name);
    await before.publish(fiber("fiber:run:started", "old-r"));
    await before.end();
    const wake = stream(name);
    for (const m of [fiber("fiber:recovery:detected", "old-r"), fiber("fiber:run:interrupted", "old-r"), fiber("fiber:recovery:attempt", "old-r")])
      await wake.publish(m);
    // The hook's new run is published after the first flush went out.
    await scheduler.wait(STREAM_FLUSH_MS * 3);
    await wake.publish(fiber("fiber:run:started", "new-r"));
    await scheduler.wait(STREAM_FLUSH_MS * 3);
    await wake.publish(fiber("fiber:run:completed", "new-r"));
    await wake.publish(fiber("fiber:recovery:handled", "old-r", { status: "user" }));
    await wake.end();
    expect(wake.tallies[0]!.flushes).toBeGreaterThanOrEqual(3);
    const rows = await pollRunRows<{ fiber_id: string; outcome: string | null; reason: string | null }>(
      name,
      () => true,
      (rs) => rs.length === 2 && rs.every((x) => x.outcome === "completed" || x.outcome === "recovered"),
    );
    expect(rows.map(({ fiber_id, outcome, reason }) => ({ fiber_id, outcome, reason }))).toEqual([
      { fiber_id: "new-r", outcome: "completed", reason: null },
      { fiber_id: "old-r", outcome: "recovered", reason: "its recovery hook started run new-r" },
    ]);
    // The same ids as the classic item of that wake.
    const classic = [...captureFromTail([before.classic()]).events, ...captureFromTail([wake.classic()]).events].map((e) => e.id).sort();
    await pollRows("SELECT id FROM events WHERE agent_name = ?", [name], (rs) => rs.length === classic.length);
    expect(await eventIds(name)).toEqual(classic);
  });

  it("sends a busy invocation in steps of at most STREAM_FLUSH_MAX entries, not at its end", async () => {
    const name = `busy-${crypto.randomUUID().slice(0, 8)}`;
    const s = stream(name);
    const n = STREAM_FLUSH_MAX + 10;
    for (let i = 0; i < n; i++) await s.publish(fiber("fiber:run:started", `f-${i}`));
    // The first STREAM_FLUSH_MAX were sent when the last of them arrived, the rest wait for the timer or the outcome.
    await pollRows("SELECT id FROM events WHERE agent_name = ?", [name], (rs) => rs.length >= STREAM_FLUSH_MAX);
    await s.end();
    expect(s.tallies).toEqual([expect.objectContaining({ entries: n, sent: n, losses: 0 })]);
    await pollRows("SELECT id FROM events WHERE agent_name = ?", [name], (rs) => rs.length === n);
  });

  it("logs no line for a stream that lost nothing unless TAIL_STREAM_DEBUG is on: one line per agent invocation is noise", async () => {
    const debug = vi.spyOn(console, "debug").mockImplementation(() => {});
    const lines = async (vars: Record<string, string>) => {
      debug.mockClear();
      const s = stream(`quiet-${crypto.randomUUID().slice(0, 8)}`, { env: { ...(env as Env), ...vars }, report: "default" });
      await s.publish(fiber("fiber:run:started", "f-q"));
      await s.publish(fiber("fiber:run:completed", "f-q"));
      await s.end();
      return debug.mock.calls.map((c) => String(c[0])).filter((l) => l.startsWith("[tail-stream]"));
    };
    try {
      expect(await lines({})).toEqual([]);
      expect(await lines({ TAIL_STREAM_DEBUG: "off" })).toEqual([]);
      expect(await lines({ TAIL_STREAM_DEBUG: "on" })).toEqual(["[tail-stream] 2 entries, 2 events sent in 1 flushes"]);
    } finally {
      debug.mockRestore();
    }
  });

  it("keeps what the runtime dropped from a stream as a dead letter with its reason, and counts a silent alarm as the classic tail does", async () => {
    const name = `dropped-${crypto.randomUUID().slice(0, 8)}`;
    const s = stream(name);
    await s.publish(fiber("fiber:run:started", "f-1"));
    await s.dropped(17);
    await s.end();
    expect(s.tallies).toEqual([expect.objectContaining({ sent: 1, losses: 1, dropped: 17 })]);
    const letters = await pollRows<{ reason: string; body: string }>(
      "SELECT reason, body FROM dead_letters WHERE body LIKE ?",
      [`%${s.objectId}%`],
      (rs) => rs.length === 1,
    );
    expect(letters[0]!.reason).toMatch(/^events lost: the Workers runtime cut this invocation's diagnostics short/);
    expect(JSON.parse(letters[0]!.body)).toMatchObject({ agentClass: "TailedAgent", agentName: name, truncated: true });

    // An alarm invocation in which nothing was published: one silent wake, recorded at its end only.
    const quiet = stream(name, { info: { type: "alarm", scheduledTime: new Date() } });
    await quiet.end();
    const wakes = await pollRows<{ n: number }>("SELECT COUNT(*) AS n FROM silent_wakes WHERE object_id = ?", [quiet.objectId], (rs) => (rs[0]?.n ?? 0) > 0);
    expect(wakes[0]!.n).toBe(1);
  });
});
