import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import type { Env } from "../../worker/env";
import { handleTail } from "../../worker/tail";
import { listenLikeATail, TAIL_CHANNELS } from "../diagnostics-tail";
import { TAIL_RESUMABLE } from "../fixtures/tail-bare-agents";
import { streamItem, type TailPath } from "../stream-tail";
import { call } from "../worker/routes/harness";
import { type Cell, compareViews, scenarioTable } from "./compare";
import { matrixHooks } from "./matrix-hooks";
import { consoleView, overviewFigures, type View } from "./observe";
import { settle } from "./settle";

/**
 * Rows of the main truth matrix on agents captured by the TAIL alone (issue 34): plain Agent classes with no package
 * of ours (test/fixtures/tail-bare-agents.ts). Every `agents:*` diagnostics message is heard as the SDK publishes it
 * and handed to the console's tail handler (worker/tail.ts), with the real Queue and ingest; the console's JSON is
 * compared with the agent's own records through expectations written here.
 *
 * Trace items: the runtime sends one per invocation; here the agents run in the test's isolate, so one item is built
 * per step (a fiber started, an eviction, one alarm run), holding that step's messages: each step is one invocation
 * of the agent as the runtime would count it. An alarm's item says it is one (`event.scheduledTime`) and names the
 * agent's Durable Object and class, as the runtime's does.
 *
 * Each tail path runs in a test file of its own: tail-truth.test.ts hands each item to the classic handler,
 * tail-stream-truth.test.ts streams it through the streaming one with one flush per message (test/stream-tail.ts).
 */

const tail = listenLikeATail(TAIL_CHANNELS);
/** The handler this file's rows run on: set once, by tailTruthRows, before any row runs. */
let path: TailPath = "classic";
const deliver = async (of?: Parameters<typeof tail.item>[0]) => {
  const item = tail.item(of);
  tail.clear();
  if (path === "streaming") await streamItem(item, env as Env);
  else await handleTail([item], env as Env);
};

type HookStub = {
  startHanging(name: string): Promise<string>;
  recoveries(): Promise<{ oldId: string; newId: string | null }[]>;
  sdkRuns(): Promise<string[]>;
  evict(): Promise<void>;
};
type KeepAliveStub = { hold(): Promise<void>; release(): Promise<void>; wakes(): Promise<{ wakes: number; objectId: string; schedules: number }> };
const uid = () => crypto.randomUUID().slice(0, 8);
const results: { name: string; cells: Cell[] }[] = [];

/** Evicts a plain agent mid-fiber and wakes it through its alarm, where the SDK hands the fiber to the recovery hook. */
async function evictAndRecover(name: string, fiberName: string): Promise<{ id: string; hook: { oldId: string; newId: string | null } | undefined }> {
  const agent = (await getAgentByName(env.TailHookAgent as never, name)) as unknown as HookStub;
  const id = await agent.startHanging(fiberName);
  await deliver();
  await agent.evict().catch(() => {});
  await deliver();
  const woken = (await getAgentByName(env.TailHookAgent as never, name)) as unknown as HookStub;
  await runDurableObjectAlarm(woken as never);
  await deliver({ entrypoint: "TailHookAgent", event: { scheduledTime: Date.now() } });
  const hook = (await woken.recoveries()).find((r) => r.oldId === id);
  // The SDK's own record: the run is no longer waiting for recovery.
  expect(await woken.sdkRuns()).not.toContain(id);
  return { id, hook };
}

/** These rows on the given tail path, with the matrix table printed after them. */
export function tailTruthRows(on: TailPath): void {
  path = on;
  const label = on === "classic" ? "tail" : "stream";

  matrixHooks(() => tail.stop(), results);

  describe(`truth matrix, rows captured by the ${on} tail`, () => {
    it(`${label}: a plain fiber whose recovery hook drops its work is shown unknown, never recovered`, async () => {
      const name = `tail-hook-drop-${uid()}`;
      const before = await overviewFigures();
      const { id, hook } = await evictAndRecover(name, "tail-dropped");
      // The agent's own record: its hook ran and started nothing.
      expect(hook).toEqual({ oldId: id, newId: null });
      await settle({ agentClass: "TailHookAgent", agentName: name }, { reconcile: false });
      // Dropping the work and resuming it some other way publish the same messages: the console says it does not know.
      const sdk: View = {
        runs: { [id]: { kind: "fiber", status: "unknown" } },
        incidents: { [id]: { status: "ended_unreported" } },
        listed: [id],
        overview: { running: 0, openIncidents: 0 },
        openIncidentRows: 0,
      };
      const shown = await consoleView({ agentClass: "TailHookAgent", agentName: name, kind: "fiber" }, sdk, before);
      const cells = compareViews(sdk, shown);
      results.push({ name: `${label}: plain fiber, hook drops its work`, cells });
      expect(
        cells.filter((c) => c.verdict === "DISAGREE"),
        scenarioTable("hook drops", cells),
      ).toEqual([]);
    });

    it(`${label}: a plain fiber whose recovery hook resumes it is recovered, with the new run it started`, async () => {
      const name = `tail-hook-resume-${uid()}`;
      const before = await overviewFigures();
      const { id, hook } = await evictAndRecover(name, TAIL_RESUMABLE);
      expect(hook?.newId).toBeTruthy();
      const newId = hook!.newId!;
      await settle({ agentClass: "TailHookAgent", agentName: name }, { reconcile: false });
      const sdk: View = {
        runs: { [id]: { kind: "fiber", status: "recovered" }, [newId]: { kind: "fiber", status: "completed", error: null } },
        incidents: { [id]: { status: "recovered" } },
        listed: [id, newId],
        overview: { running: 0, openIncidents: 0 },
        openIncidentRows: 0,
      };
      const shown = await consoleView({ agentClass: "TailHookAgent", agentName: name, kind: "fiber" }, sdk, before);
      const cells = compareViews(sdk, shown);
      results.push({ name: `${label}: plain fiber, hook resumes it`, cells });
      expect(
        cells.filter((c) => c.verdict === "DISAGREE"),
        scenarioTable("hook resumes", cells),
      ).toEqual([]);
    });

    it(`${label}: an agent kept awake by keepAlive() alone is listed on /awake, its silent wakes equal to its own count of alarm runs`, async () => {
      const name = `tail-keepalive-${uid()}`;
      const agent = (await getAgentByName(env.TailKeepAliveAgent as never, name)) as unknown as KeepAliveStub;
      await agent.hold();
      await deliver();
      const { objectId } = await agent.wakes();
      // Each heartbeat is an alarm invocation in which the SDK publishes nothing: one trace item each.
      for (let i = 0; i < 4; i++) {
        await runDurableObjectAlarm(agent as never);
        await deliver({ durableObjectId: objectId, entrypoint: "TailKeepAliveAgent", event: { scheduledTime: Date.now() } });
      }
      await agent.release();
      await deliver();
      const own = await agent.wakes();
      expect(own.schedules).toBe(0);
      const res = await call("/awake", { as: "viewer", headers: { Accept: "application/json" } });
      const { silentWakes } = (await res.json()) as {
        silentWakes: { objectId: string; agentClass: string | null; agentName: string | null; wakes: number }[];
      };
      const shown = silentWakes.find((w) => w.objectId === objectId);
      const cells: Cell[] = [
        { field: "awake.listed", sdk: true, console: shown !== undefined, verdict: shown ? "agree" : "DISAGREE" },
        { field: "awake.silentWakes", sdk: own.wakes, console: shown?.wakes, verdict: shown?.wakes === own.wakes ? "agree" : "DISAGREE" },
      ];
      results.push({ name: `${label}: keepAlive-only agent`, cells });
      expect(own.wakes).toBeGreaterThan(0);
      // It never published an SDK event, so the console knows it by class and object id only (docs/capture.md).
      expect(shown).toMatchObject({ agentClass: "TailKeepAliveAgent", agentName: null, wakes: own.wakes });
    });
  });
}
