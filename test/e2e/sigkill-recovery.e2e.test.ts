import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { appPost, type DevServer, d1, startDev, stop } from "./wrangler-dev";

const servers: DevServer[] = [];
afterAll(async () => {
  for (const s of servers) await stop(s, "SIGKILL");
});

type Listed = { type: string; incidentId: string | null };

/** The agent's events of these types as the console lists them (its events list, JSON), until `check` holds. */
async function pollEvents(s: DevServer, types: string[], check: (rows: Listed[]) => boolean, timeoutMs = 30_000) {
  const q = new URLSearchParams({ type: types.join(","), agentClass: "DemoSessionAgent", agentName: "e2e-kill" });
  const deadline = Date.now() + timeoutMs;
  let rows: Listed[] = [];
  while (Date.now() < deadline) {
    const r = await fetch(`${s.base}/events?${q}`, { headers: { Accept: "application/json" } });
    if (r.ok) rows = ((await r.json()) as { items: Listed[] }).items;
    if (check(rows)) return rows;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`the console never listed the events; last: ${JSON.stringify(rows).slice(0, 1000)}`);
}

it("a turn running when wrangler dev is SIGKILLed is recovered after a restart on the same persist dir, and the console lists its events", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "sigkill-"));
  const port = 8791;
  const first = await startDev({ port, persistDir: dir });
  servers.push(first);

  const r = await appPost(first, "/dev/sessions/e2e-kill/messages", {
    text: "run the long import",
    script: JSON.stringify({ chunks: ["Importing 10,000 rows"], stall: true }),
  });
  expect(await r.json()).toEqual({ ok: true, value: { turnSeq: 1 } });
  await pollEvents(first, ["fiber.started"], (rows) => rows.length === 1);

  // The whole process tree dies at once: no shutdown hooks, no flush.
  await stop(first, "SIGKILL");

  const second = await startDev({ port, persistDir: dir });
  servers.push(second);
  // Any request wakes the agent; the SDK then finds the orphaned run row and recovers the turn.
  const status = await fetch(`${second.base}/api/agents/DemoSessionAgent/e2e-kill`, { headers: { Accept: "application/json" } });
  expect(status.status).toBe(200);

  const recovery = ["fiber.recovery.detected", "fiber.recovery.handled", "session.status_rescheduled"];
  const rows = await pollEvents(second, recovery, (rows) => recovery.every((t) => rows.some((x) => x.type === t)));
  const rescheduled = rows.find((x) => x.type === "session.status_rescheduled")!;
  expect(rescheduled.incidentId).toBe("turn:DemoSessionAgent/e2e-kill/1");
  const incident = d1(dir, "SELECT kind, status, attempts FROM incidents WHERE incident_id = 'turn:DemoSessionAgent/e2e-kill/1'");
  // The recovered turn stalls again on purpose, so it stays open. On a loaded machine the runtime may evict the
  // re-run too and the SDK recovers it once more: each recovery is one attempt, and the budget is 5.
  expect(incident).toEqual([{ kind: "turn", status: "open", attempts: expect.any(Number) }]);
  expect(incident[0]!.attempts as number).toBeGreaterThanOrEqual(1);
  expect(incident[0]!.attempts as number).toBeLessThanOrEqual(5);
  await stop(second);
});
