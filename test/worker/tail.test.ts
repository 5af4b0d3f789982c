import { env } from "cloudflare:workers";
import type { TailItem } from "@agent-oncall/telemetry/tail";
import { describe, expect, it } from "vitest";
import { runHref } from "../../console/links";
import type { SilentWakeRate } from "../../src/store/read-models/residency";
import type { Env } from "../../worker/env";
import { handleTail } from "../../worker/tail";
import { count, pollRows, pollRunRows } from "../helpers";
import { publishEnvTeamKeys } from "./access-tokens";
import { call } from "./routes/harness";

/** A trace item of one agent invocation, carrying SDK messages as the runtime forwards them. */
function item(name: string, messages: { type: string; payload: Record<string, unknown> }[], over: Partial<TailItem> = {}): TailItem {
  const t = Date.now();
  return {
    scriptName: null,
    durableObjectId: crypto.randomUUID().replace(/-/g, ""),
    eventTimestamp: t,
    truncated: false,
    diagnosticsChannelEvents: messages.map((m) => ({
      timestamp: t,
      channel: `agents:${m.type.split(":")[0]}`,
      message: { ...m, agent: "TailedAgent", name, timestamp: t },
    })),
    ...over,
  };
}

const run = (fiberId: string, end: "completed" | "failed") => [
  { type: "fiber:run:started", payload: { fiberId, fiberName: "import", managed: false } },
  end === "completed"
    ? { type: "fiber:run:completed", payload: { fiberId, fiberName: "import", managed: false, elapsedMs: 5 } }
    : { type: "fiber:run:failed", payload: { fiberId, fiberName: "import", managed: false, error: "quota exceeded" } },
];

describe("the console's tail handler", () => {
  it("puts captured events through the telemetry Queue into the store, once however often an item is delivered", async () => {
    const name = `tailed-${crypto.randomUUID().slice(0, 8)}`;
    const items = [item(name, run("f-ok", "completed")), item(name, run("f-bad", "failed"))];
    const r = await handleTail(items, env as Env);
    expect(r).toMatchObject({ items: 2, read: 4, sent: 4, losses: 0, sendFailed: 0 });
    // As the console holds them: the failed one in D1, the completed one (it left D1) folded from R2.
    const rows = (
      await pollRunRows<{ fiber_id: string; outcome: string; error: string | null }>(
        name,
        () => true,
        (rs) => rs.length === 2 && rs.every((x) => x.outcome),
      )
    ).map(({ fiber_id, outcome, error }) => ({ fiber_id, outcome, error }));
    expect(rows).toEqual([
      { fiber_id: "f-bad", outcome: "failed", error: "quota exceeded" },
      { fiber_id: "f-ok", outcome: "completed", error: null },
    ]);
    // The runtime may deliver an item again: the same ids, stored once.
    await handleTail(items, env as Env);
    await pollRows("SELECT id FROM events WHERE agent_name = ?", [name], (rs) => rs.length === 4);
    await scheduler.wait(1500);
    expect(await count("SELECT COUNT(*) AS n FROM events WHERE agent_name = ?", name)).toBe(4);
  });

  it("keeps what the runtime cut short and what it could not read as dead letters with their reason", async () => {
    const name = `cut-${crypto.randomUUID().slice(0, 8)}`;
    const cut = item(name, run("f-1", "completed").slice(0, 1), { truncated: true });
    const garbled: TailItem = { ...item(name, []), diagnosticsChannelEvents: [{ timestamp: Date.now(), channel: "agents:fiber", message: "not an event" }] };
    const r = await handleTail([cut, garbled], env as Env);
    expect(r).toMatchObject({ sent: 1, losses: 2 });
    const letters = (
      await env.DB.prepare("SELECT reason, body FROM dead_letters WHERE body LIKE ? ORDER BY reason").bind(`%${name}%`).all<{ reason: string; body: string }>()
    ).results;
    expect(letters.map((l) => l.reason)).toEqual([
      "events lost: the Workers runtime cut this invocation's diagnostics short (its per-invocation limit); the agent's later events of that invocation never reached the console",
    ]);
    expect(JSON.parse(letters[0]!.body)).toMatchObject({ agentClass: "TailedAgent", agentName: name, worker: "(not named: local dev)" });
    // The garbled one names no agent (its message is unreadable): it is found by where it came from.
    const unread = await env.DB.prepare("SELECT reason FROM dead_letters WHERE body LIKE ?").bind(`%${garbled.durableObjectId}%`).first<{ reason: string }>();
    expect(unread?.reason).toMatch(/^unreadable diagnostics message on agents:fiber/);
  });

  it("keeps the events as dead letters when the Queue refuses them (the platform does not retry a tail)", async () => {
    const name = `refused-${crypto.randomUUID().slice(0, 8)}`;
    const refusing = {
      ...env,
      TELEMETRY_QUEUE: {
        send: () => Promise.reject(new Error("queue over its limit")),
        sendBatch: () => Promise.reject(new Error("queue over its limit")),
      },
    } as unknown as Env;
    const r = await handleTail([item(name, run("f-1", "completed"))], refusing);
    expect(r).toMatchObject({ sent: 0, sendFailed: 2 });
    const letters = (
      await env.DB.prepare("SELECT reason, event_type, body FROM dead_letters WHERE body LIKE ? ORDER BY event_type").bind(`%${name}%`).all<{
        reason: string;
        event_type: string;
        body: string;
      }>()
    ).results;
    expect(letters.map((l) => [l.event_type, l.reason])).toEqual([
      ["fiber.completed", "captured from the tail, but the telemetry Queue refused it"],
      ["fiber.started", "captured from the tail, but the telemetry Queue refused it"],
    ]);
    expect(JSON.parse(letters[0]!.body)).toMatchObject({ type: "fiber.completed", source: { agentClass: "TailedAgent", agentName: name } });
  });

  it("lists a Durable Object woken by alarms that published nothing (a keepAlive heartbeat) on /awake, by the name its own events gave, each wake once", async () => {
    await publishEnvTeamKeys();
    const name = `kept-${crypto.randomUUID().slice(0, 8)}`;
    const kept = crypto.randomUUID().replace(/-/g, "");
    const nameless = crypto.randomUUID().replace(/-/g, "");
    const t0 = Date.now() - 120_000;
    // As the runtime hands an alarm invocation to a tail: its event is the alarm, the entrypoint its class.
    const alarm = (objectId: string, at: number, over: Partial<TailItem> = {}): TailItem => ({
      scriptName: null,
      durableObjectId: objectId,
      entrypoint: "KeptAgent",
      eventTimestamp: at,
      event: { scheduledTime: new Date(at) },
      truncated: false,
      diagnosticsChannelEvents: [],
      ...over,
    });
    // The object named itself once, in an earlier invocation that published an SDK event.
    const named = item(name, run("f-1", "completed"), { durableObjectId: kept, entrypoint: "KeptAgent" });
    const wakes = [0, 1, 2, 3].map((i) => alarm(kept, t0 + i * 30_000));
    const others = [
      alarm(nameless, t0 + 5_000),
      alarm(nameless, t0 + 35_000),
      // Not silent wakes: an alarm that published an SDK event, one cut short (what it published is unknown), a cron.
      item(name, run("f-2", "completed"), { durableObjectId: kept, entrypoint: "KeptAgent", event: { scheduledTime: new Date(t0 + 10_000) } }),
      alarm(kept, t0 + 20_000, { truncated: true }),
      alarm(kept, t0 + 25_000, { event: { scheduledTime: t0 + 25_000, cron: "* * * * *" } }),
    ];
    const r = await handleTail([named, ...wakes, ...others], env as Env);
    expect(r).toMatchObject({ silentWakes: 6 });
    // Delivered again: each wake is still counted once.
    await handleTail(wakes, env as Env);

    const res = await call("/awake", { as: "viewer", headers: { Accept: "application/json" } });
    expect(res.status).toBe(200);
    const rows = ((await res.json()) as { silentWakes: SilentWakeRate[] }).silentWakes;
    expect(rows.find((w) => w.objectId === kept)).toEqual({
      worker: "",
      objectId: kept,
      agentClass: "TailedAgent",
      agentName: name,
      wakes: 4,
      firstAt: t0,
      lastAt: t0 + 90_000,
      perHour: 120,
    });
    // Never named by an event of its own: its class and id, and no name made up.
    expect(rows.find((w) => w.objectId === nameless)).toMatchObject({ agentClass: "KeptAgent", agentName: null, wakes: 2 });
    const html = await (await call("/awake", { as: "viewer" })).text();
    expect(html).toContain(`data-object-id="${kept}" data-agent="TailedAgent/${name}" data-wakes="4"`);
    expect(html).toContain("name unknown (it published no event)");
  });

  it("shows a recovered runFiber whose hook resumed it as recovered with a link to the new run, and one whose hook said nothing as unknown, never recovered", async () => {
    await publishEnvTeamKeys();
    const name = `hooked-${crypto.randomUUID().slice(0, 8)}`;
    const fiber = (type: string, fiberId: string, extra: Record<string, unknown> = {}) => ({
      type,
      payload: { fiberId, fiberName: "export", managed: false, ...extra },
    });
    // The SDK's messages on wake, in its order: the hook of "old-r" starts "new-r" under the same name; "old-d"'s does not.
    const recovery = (old: string, during: { type: string; payload: Record<string, unknown> }[]) => [
      fiber("fiber:recovery:detected", old),
      fiber("fiber:run:interrupted", old),
      fiber("fiber:recovery:attempt", old),
      ...during,
      fiber("fiber:recovery:handled", old, { status: "user" }),
    ];
    const before = item(name, [fiber("fiber:run:started", "old-r"), fiber("fiber:run:started", "old-d")]);
    const wake = item(name, [...recovery("old-r", [fiber("fiber:run:started", "new-r"), fiber("fiber:run:completed", "new-r")]), ...recovery("old-d", [])]);
    await handleTail([before], env as Env);
    await handleTail([wake], env as Env);
    const rows = (
      await pollRunRows<{ fiber_id: string; outcome: string | null; reason: string | null }>(
        name,
        () => true,
        (rs) => rs.length === 3 && rs.every((x) => x.outcome !== null && x.outcome !== "recovering" && x.outcome !== "interrupted"),
      )
    ).map(({ fiber_id, outcome, reason }) => ({ fiber_id, outcome, reason }));
    expect(rows).toEqual([
      { fiber_id: "new-r", outcome: "completed", reason: null },
      { fiber_id: "old-d", outcome: "unknown", reason: "its recovery hook ran; the SDK's events do not say whether it resumed or dropped the work" },
      { fiber_id: "old-r", outcome: "recovered", reason: "its recovery hook started run new-r" },
    ]);
    const incidents = await pollRows<{ incident_id: string; status: string; closed_by: string | null }>(
      "SELECT incident_id, status, closed_by FROM incidents WHERE agent_name = ? ORDER BY incident_id",
      [name],
      (rs) => rs.length === 2 && rs.every((x) => x.status !== "open" || x.closed_by !== null),
    );
    expect(incidents).toEqual([
      { incident_id: `fiber:TailedAgent/${name}/old-d`, status: "open", closed_by: "ended_unreported" },
      { incident_id: `fiber:TailedAgent/${name}/old-r`, status: "recovered", closed_by: null },
    ]);
    const owner = { agentClass: "TailedAgent", agentName: name };
    const page = await (await call(runHref("old-r", owner), { as: "viewer" })).text();
    expect(page).toContain(`<a href="${runHref("new-r", owner).replaceAll("&", "&amp;")}">new-r</a>`);
  });
});
