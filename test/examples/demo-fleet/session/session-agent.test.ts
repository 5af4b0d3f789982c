import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { MAX_TURN_RECOVERIES } from "../../../../examples/demo-fleet/src/session";
import { pollRows } from "../../../helpers";
import { patient } from "../../../patience";

const fresh = () => `s-${crypto.randomUUID().slice(0, 8)}`;
const agent = (name: string) => getAgentByName(env.FaultySessionAgent, name);

/** Calls through a stub that may be mid-eviction; an eviction error is expected, anything else is returned. */
async function tolerate(p: PromiseLike<unknown>): Promise<unknown> {
  try {
    return await p;
  } catch (e) {
    if (!/planned (eviction|fault)|test eviction|reset|broken|Network connection lost/i.test(String(e))) throw e;
    return undefined;
  }
}

/** The session's status through a fresh stub; undefined while the instance is being evicted. */
async function statusOf(name: string): Promise<unknown> {
  return tolerate((async () => (await agent(name)).status())());
}

/** Wakes the agent (the SDK recovers orphaned fibers on wake and on alarm) until its turn work is settled. */
async function settle(name: string, timeoutMs = patient(15_000)): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await statusOf(name);
    if (status === "idle" || status === "terminated") return;
    if (status === "running") await tolerate((async () => runDurableObjectAlarm(await agent(name)))());
    if (Date.now() > deadline) throw new Error(`session ${name} did not settle; last status ${status}`);
    await scheduler.wait(30);
  }
}

const d1Types = (name: string) =>
  env.DB.prepare("SELECT type, op_id, incident_id, payload FROM events WHERE agent_name = ? ORDER BY time, id")
    .bind(name)
    .all<{ type: string; op_id: string | null; incident_id: string | null; payload: string }>()
    .then((r) => r.results);

describe("SessionAgent: status, turns and termination", () => {
  it("runs a turn, derives its status at each step, and reports through telemetry", async () => {
    const name = fresh();
    const s = await agent(name);
    expect(await s.status()).toBe("idle");
    await s.setScript({ chunks: ["Looking ", "that up."], tool: { name: "search", args: { q: "refund policy" } }, final: [" Refunds take 5 days."] });
    const r = await s.sendMessage("How long do refunds take?", { wait: true });
    expect(r).toEqual({ ok: true, value: { turnSeq: 1 } });
    expect(await s.status()).toBe("idle");
    const events = await s.events();
    expect(events.map((e) => [e.kind, e.content])).toEqual([
      ["user", "How long do refunds take?"],
      ["tool", JSON.stringify({ tool: "search", result: { hits: ["result for refund policy"] } })],
      ["assistant", "Looking that up. Refunds take 5 days."],
    ]);
    const rows = await pollRows<{ type: string }>("SELECT type FROM events WHERE agent_name = ? ORDER BY time, id", [name], (x) =>
      x.some((e) => e.type === "session.status_idle"),
    );
    expect(rows.map((x) => x.type).filter((t) => t.startsWith("session.") || t.startsWith("op."))).toEqual([
      "session.status_running",
      "op.started",
      "op.completed", // model request 1
      "op.started",
      "op.completed", // tool.search
      "op.started",
      "op.completed", // model request 2
      "session.status_idle",
    ]);
  });

  it("is running while a turn is live, idle after an interrupt, and terminated for good", async () => {
    const name = fresh();
    const s = await agent(name);
    await s.setScript({ chunks: ["Thinking"], stall: true });
    await s.sendMessage("Write me a novel");
    expect(await s.status()).toBe("running");
    expect(await s.sendMessage("are you there?")).toMatchObject({ ok: false, error: { code: "busy" } });
    expect(await s.interrupt()).toEqual({ interrupted: [1] });
    await expect.poll(() => s.status()).toBe("idle");

    expect(await s.terminate("customer closed the ticket")).toMatchObject({ ok: true });
    expect(await s.status()).toBe("terminated");
    expect(await s.sendMessage("hello again")).toEqual({
      ok: false,
      error: { code: "terminated", message: `session ${name} is terminated and accepts no more messages` },
    });
    await pollRows("SELECT 1 FROM events WHERE agent_name = ? AND type IN ('session.status_terminated','backup.created')", [name], (x) => x.length === 2);
  });
});

describe("SessionAgent: evicted at every point of a turn", () => {
  const chargeScript = { chunks: ["Charging your card. "], tool: { name: "charge_card", args: { amountCents: 1299 } }, final: ["Done: charged $12.99."] };
  const searchScript = { chunks: ["Let me check. "], tool: { name: "search", args: { q: "status" } }, final: ["All systems normal."] };

  async function evictAt(script: object, fault: { point: string; kind?: string }) {
    const name = fresh();
    const s = await agent(name);
    await s.setScript(script as never);
    await s.setFault({ ...fault, times: 1 } as never);
    await tolerate(s.sendMessage("please do it"));
    await settle(name);
    const after = await agent(name);
    return { name, s: after, events: await after.events(), ops: await after.ops(), recoveries: await after.recoveries(1) };
  }

  it("before op_started: the turn recovers and the op runs once", async () => {
    const r = await evictAt(searchScript, { point: "before_op_started", kind: "model.request" });
    expect(r.recoveries).toBe(1);
    expect(r.events.filter((e) => e.kind === "assistant").map((e) => e.content)).toEqual(["Let me check. All systems normal."]);
    expect(r.ops.map((o) => [o.kind, o.status])).toEqual([
      ["model.request", "completed"],
      ["tool.search", "completed"],
      ["model.request", "completed"],
    ]);
  });

  it("between op_started and op_completed of an idempotent op: re-issued with the same key, completed once", async () => {
    const r = await evictAt(searchScript, { point: "after_op_started", kind: "tool.search" });
    expect(r.recoveries).toBe(1);
    expect(r.ops.filter((o) => o.kind === "tool.search")).toEqual([expect.objectContaining({ status: "completed" })]);
    expect(r.events.filter((e) => e.kind === "assistant")).toHaveLength(1);
  });

  it("between op_started and op_completed of a paid, non-idempotent op: ambiguous, surfaced, never re-run", async () => {
    const r = await evictAt(chargeScript, { point: "after_op_started", kind: "tool.charge_card" });
    const charge = r.ops.find((o) => o.kind === "tool.charge_card")!;
    expect(charge.status).toBe("ambiguous");
    expect(r.events.some((e) => e.kind === "tool")).toBe(false); // the charge never ran a second time
    expect(r.events.filter((e) => e.kind === "notice").map((e) => e.content)).toEqual([
      `Operation tool.charge_card (${charge.op_id}) may have executed before the agent was interrupted. Verify it before retrying.`,
    ]);
    expect(await r.s.status()).toBe("idle");
    const rows = await pollRows<{ type: string; op_id: string }>(
      "SELECT type, op_id FROM events WHERE agent_name = ? AND op_id = ?",
      [r.name, charge.op_id],
      (x) => x.some((e) => e.type === "op.ambiguous"),
    );
    expect(rows.map((x) => x.type)).toEqual(["op.started", "op.ambiguous"]);
    const amb = await pollRows<{ op_kind: string; resolution: string | null }>(
      // Op ids are unique per agent only: another test's agent may hold an ambiguity with the same id.
      "SELECT op_kind, resolution FROM op_ambiguities WHERE agent_name = ? AND op_id = ?",
      [r.name, charge.op_id],
      (x) => x.length === 1,
    );
    expect(amb[0]).toEqual({ op_kind: "tool.charge_card", resolution: null });

    // Someone checked with the payment provider: it did not go through.
    expect(await r.s.resolveOp(charge.op_id, "verified_not_ran")).toBe(true);
    await pollRows(
      "SELECT 1 FROM op_ambiguities WHERE agent_name = ? AND op_id = ? AND resolution = 'verified_not_ran'",
      [r.name, charge.op_id],
      (x) => x.length === 1,
    );
  });

  it("mid-stream: the turn resumes after the streamed text, and delivers it once", async () => {
    const r = await evictAt({ chunks: ["One. ", "Two. ", "Three."] }, { point: "mid_stream" });
    expect(r.recoveries).toBe(1);
    // The first chunk was streamed before the eviction and was not streamed again.
    expect(r.events.filter((e) => e.kind === "assistant").map((e) => e.content)).toEqual(["One. Two. Three."]);
  });

  it("after op_completed of a paid op: the recorded result is replayed, the charge is not repeated", async () => {
    const r = await evictAt(chargeScript, { point: "after_op_completed", kind: "tool.charge_card" });
    expect(r.recoveries).toBe(1);
    expect(r.ops.find((o) => o.kind === "tool.charge_card")!.status).toBe("completed");
    expect(r.events.filter((e) => e.kind === "tool")).toHaveLength(1);
    const starts = await pollRows<{ type: string }>(
      "SELECT type FROM events WHERE agent_name = ? AND type = 'op.started' AND payload LIKE '%charge_card%'",
      [r.name],
      (x) => x.length >= 1,
    );
    expect(starts).toHaveLength(1);
  });

  it("after completion: a re-run turn replays every op and delivers nothing twice", async () => {
    const r = await evictAt(chargeScript, { point: "after_turn" });
    expect(r.recoveries).toBe(1);
    expect(r.events.map((e) => e.kind)).toEqual(["user", "tool", "assistant"]);
    expect(r.ops.every((o) => o.status === "completed")).toBe(true);
  });
});

describe("SessionAgent: the recovery cap", () => {
  it(`recovers a turn at most ${MAX_TURN_RECOVERIES} times; the next forces the session idle with session.error`, async () => {
    const name = fresh();
    const s = await agent(name);
    await s.setScript({ chunks: ["Partial ", "answer"] });
    // A poison turn: the instance dies every time the turn starts, as with an input that exhausts memory.
    await s.setFault({ point: "turn_start", times: 100 });
    await tolerate(s.sendMessage("this keeps crashing"));
    // Every wake recovers the turn, which streams and is evicted again.
    for (let i = 0; i < 40 && (await statusOf(name)) !== "idle"; i++) {
      await tolerate((async () => runDurableObjectAlarm(await agent(name)))());
      await scheduler.wait(20);
    }
    const after = await agent(name);
    expect(await after.status()).toBe("idle");
    expect(await after.recoveries(1)).toBe(MAX_TURN_RECOVERIES + 1);
    const notices = (await after.events()).filter((e) => e.kind === "notice");
    expect(notices.map((n) => n.content)).toEqual([`turn 1 was interrupted 6 times; recovery stopped after 5 attempts and the session is idle`]);

    const incidentId = `turn:FaultySessionAgent/${name}/1`;
    const inc = await pollRows<{ status: string; attempts: number; reason: string }>(
      "SELECT status, attempts, reason FROM incidents WHERE incident_id = ?",
      [incidentId],
      (x) => x[0]?.status === "exhausted",
    );
    expect(inc[0]!.attempts).toBe(MAX_TURN_RECOVERIES);
    expect(inc[0]!.reason).toBe("max_turn_recoveries");
    const types = (await d1Types(name)).filter((e) => e.incident_id === incidentId).map((e) => e.type);
    expect(types).toEqual([...Array(MAX_TURN_RECOVERIES).fill("session.status_rescheduled"), "session.error"]);
    // The counter survived every eviction, and no event was lost on the way.
    const stats = await after.settleTelemetry();
    expect(stats.pending).toBe(0);
  });
});
