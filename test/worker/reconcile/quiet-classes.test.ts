import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { TELEMETRY_QUIET_MS } from "../../../src/store/read-models/blocked-agents";
import { blockedAgentsIn } from "../../../src/store/read-models/merged";
import { alertTelemetry, brokenPipelines } from "../../../worker/alerts/telemetry";
import { reconcileStale } from "../../../worker/reconcile/pass";
import { QUIET_CLASS_HORIZON_MS, quietClassTargets } from "../../../worker/reconcile/quiet-classes";
import { consoleStoreFromEnv, storeFromEnv } from "../../../worker/store";
import { pollRows } from "../../helpers";
import { registerAgent } from "../routes/harness";

// A Worker whose telemetry broke while its agents had nothing open: reconciliation otherwise asks only agents with
// stale open work or missing events, so its agents looked idle. Real agents in workerd (both mixins, a Queue binding
// their Worker lacks), the real store, the real alerts Queue and webhook receiver.

const MIN = 60_000;
const uid = () => crypto.randomUUID().slice(0, 8);
const CLASS = "QuietClassAgent";
const received = async (match: string): Promise<{ channel: string; body: Record<string, unknown> }[]> =>
  (await (await fetch(`${env.ALERT_CONTROL}/__requests?${new URLSearchParams({ match })}`)).json()) as { channel: string; body: Record<string, unknown> }[];
const asked = (name: string) =>
  env.DB.prepare("SELECT asked_at AS askedAt FROM reconciliations WHERE agent_class = ? AND agent_name = ?").bind(CLASS, name).first<{ askedAt: number }>();

describe("reconciliation asks one agent of each class gone quiet", () => {
  it("finds a Worker without its telemetry Queue binding whose agents have nothing open, and alerts on it", async () => {
    const older = `quiet-older-${uid()}`;
    const newest = `quiet-newest-${uid()}`;
    for (const name of [older, newest]) {
      // Its events wait in its outbox: the Worker has no Queue to send them on (a deploy dropped the binding).
      await (await getAgentByName(env.QuietClassAgent, name)).work();
      // Known to the console from before.
      await registerAgent(CLASS, name);
    }
    // The older one last reported 3 minutes before the newest (agents are listed by last activity to the minute).
    await env.DB.prepare("UPDATE agents SET last_seen = last_seen - ?1, listed_at = listed_at - ?1 WHERE agent_class = ? AND agent_name = ?")
      .bind(3 * MIN, CLASS, older)
      .run();
    const seen = await pollRows<{ lastSeen: number }>(
      "SELECT last_seen AS lastSeen FROM agents WHERE agent_class = ? AND agent_name = ?",
      [CLASS, newest],
      (r) => r.length === 1,
    );
    const heard = seen[0]!.lastSeen;
    // Nothing of it is open: no pass of stale work or gaps would ask it.
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM runs WHERE agent_class = ?").bind(CLASS).first<{ n: number }>()).toEqual({ n: 0 });

    // Heard from a moment ago: its pipeline is proven by the events, nobody is asked.
    expect((await quietClassTargets(env, heard + 1_000, heard - 10 * MIN, new Set())).filter((t) => t.agentClass === CLASS)).toEqual([]);
    // Quiet for longer than the horizon: an unused class is left asleep.
    expect((await quietClassTargets(env, heard + QUIET_CLASS_HORIZON_MS + MIN, heard, new Set())).filter((t) => t.agentClass === CLASS)).toEqual([]);
    // A class one of whose agents already answered in the pass is not asked again.
    expect((await quietClassTargets(env, heard + 6 * MIN, heard - 4 * MIN, new Set([CLASS]))).filter((t) => t.agentClass === CLASS)).toEqual([]);

    // Quiet for 6 minutes: the cron's pass (nothing stale, no gaps: batch 0) asks the class's most recently seen agent.
    const now = heard + TELEMETRY_QUIET_MS + MIN;
    const pass = (await reconcileStale(env, { afterMs: 10 * MIN, batch: 0, unknownAfterMs: 60 * MIN }, now)).filter((p) => p.target.agentClass === CLASS);
    expect(pass.map((p) => [p.target.agentName, p.error])).toEqual([[newest, null]]);
    expect(pass[0]!.telemetry).toMatchObject({ queueBound: false, sent: 0 });
    expect((await asked(newest))?.askedAt).toBe(now);
    expect(await asked(older)).toBeNull();
    expect((await brokenPipelines(consoleStoreFromEnv(env, now), pass, now)).map((b) => [b.target.agentName, b.state])).toEqual([[newest, "no_queue"]]);

    // What the cron does with the pass: the telemetry alert, through the real Queue to both channels.
    expect((await alertTelemetry(env, pass, now)).queued).toBe(2);
    await pollRows<{ status: string }>(
      "SELECT status FROM alert_deliveries WHERE agent_name = ?",
      [newest],
      (r) => r.length === 2 && r.every((d) => d.status === "sent"),
    );
    const json = (await received(newest)).find((r) => r.channel === "webhook")!.body;
    expect(json).toMatchObject({ kind: "telemetry", agent: { class: CLASS, name: newest }, details: { state: "no_queue", agents: 1 } });

    // The overview counts it until an event from it arrives: the agents list with blocked=true is that agent.
    const blocked = (await blockedAgentsIn(storeFromEnv(env), { agentClass: CLASS })).items;
    expect(blocked.map((a) => [a.agentName, a.pipeline, a.askedAt])).toEqual([[newest, "no_queue", now]]);

    // The next pass, within the reconcile age: the class costs one status call per reconcile age, not one per pass.
    const next = await reconcileStale(env, { afterMs: 10 * MIN, batch: 0, unknownAfterMs: 60 * MIN }, now + 5 * MIN);
    expect(next.filter((p) => p.target.agentClass === CLASS)).toEqual([]);
    // Past it, asked again.
    const later = await reconcileStale(env, { afterMs: 10 * MIN, batch: 0, unknownAfterMs: 60 * MIN }, now + 11 * MIN);
    expect(later.filter((p) => p.target.agentClass === CLASS).map((p) => p.target.agentName)).toEqual([newest]);
  });
});
