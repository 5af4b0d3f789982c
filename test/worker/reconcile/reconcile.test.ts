import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { fiberIncidentId } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { getIncident } from "../../../src/store/read-models";
import worker from "../../../worker/index";
import { CRONS } from "../../../worker/topology";
import { pollRows, pollRunRows, runRowsOf } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { mustTestId } from "../html";
import { csrfFromPage, getOverview, getText, postForm, uid } from "../routes/harness";

// Events get lost (a process kill drops the local queue; here LossyAgent loses them on purpose). The
// console then asks the agent itself, from cron and when its page is viewed, and records what it found:
// a run, session or incident whose end was never reported is closed as "ended_unreported"; one the agent
// still runs is confirmed. All through the real admin RPC, the real Queue and D1.

const MIN = 60_000;

/** Moves an agent's projection rows `ms` into the past: the time reconciliation waits for lost events. */
async function age(agentName: string, ms: number) {
  await env.DB.batch([
    env.DB.prepare("UPDATE incidents SET last_seen = last_seen - ? WHERE agent_name = ?").bind(ms, agentName),
    // A run's and a session's listed_at is its last_seen to the minute, as ingest writes it.
    env.DB.prepare(`UPDATE runs SET last_seen = last_seen - ?1, listed_at = (last_seen - ?1) - ((last_seen - ?1) % 60000) WHERE agent_name = ?2`).bind(
      ms,
      agentName,
    ),
    // Every time a session row holds ages alike: its status and last event were reported no later than last_seen.
    env.DB.prepare(
      "UPDATE sessions SET last_seen = last_seen - ?1, status_at = status_at - ?1, last_event_at = last_event_at - ?1, listed_at = (last_seen - ?1) - ((last_seen - ?1) % 60000) WHERE agent_name = ?2",
    ).bind(ms, agentName),
  ]);
}

/** Runs the console's reconcile cron as the platform would, and waits for its background work. */
async function reconcileCron() {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: CRONS.reconcile, scheduledTime: Date.now() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

type RunRow = {
  fiber_id: string;
  outcome: string | null;
  reason: string | null;
  confirmed_at: number | null;
  last_seen: number;
  snapshot_preview: string | null;
};
const runRow = (agentName: string, id: string) =>
  env.DB.prepare("SELECT fiber_id, outcome, reason, confirmed_at, last_seen, snapshot_preview FROM runs WHERE agent_name = ? AND fiber_id = ?")
    .bind(agentName, id)
    .first<RunRow>();

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("reconciliation from cron", () => {
  const name = `lossy-${uid()}`;
  let lost: string;
  let held: string;
  const gone = "fiber-gone-0001";

  beforeAll(async () => {
    const stub = await getAgentByName(env.LossyAgent, name);
    lost = await stub.runLosingTheEnd();
    held = await stub.startHeld();
    await stub.reportOpenSessionAndRecovery("support-7", gone);
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND snapshot_preview IS NOT NULL", [name], (r) => r.length === 2);
    await pollRows("SELECT 1 FROM sessions WHERE agent_name = ? UNION ALL SELECT 1 FROM incidents WHERE agent_name = ?", [name, name], (r) => r.length === 2);
  });

  it("closes the run whose end was lost as ended, not reported, confirms the one still running, and closes the session and incident", async () => {
    // As the events tell it: both runs running, the session running, the recovery open.
    expect((await runRow(name, lost))?.outcome).toBeNull();
    expect(
      (await env.DB.prepare("SELECT COUNT(*) AS n FROM events WHERE agent_name = ? AND type = 'fiber.completed'").bind(name).first<{ n: number }>())?.n,
    ).toBe(0);

    // Younger than RECONCILE_AFTER_MINUTES (10): the lost end may still be in flight, so nothing is judged.
    await age(name, 5 * MIN);
    await reconcileCron();
    expect((await runRow(name, lost))?.outcome).toBeNull();
    expect((await runRow(name, held))?.confirmed_at).toBeNull();

    await age(name, 6 * MIN);
    const agedLastSeen = (await runRow(name, held))!.last_seen;
    await reconcileCron();

    const closed = await pollRows<RunRow>(
      "SELECT fiber_id, outcome, reason FROM runs WHERE agent_name = ? AND fiber_id = ? AND outcome IS NOT NULL",
      [name, lost],
      (r) => r.length === 1,
    );
    expect(closed[0]).toMatchObject({ outcome: "ended_unreported", reason: "the agent has no record of this fiber; how it ended was not reported" });
    // The last-known snapshot survives the close.
    expect((await runRow(name, lost))?.snapshot_preview).toContain('"page":1');

    const confirmed = await pollRows<RunRow>(
      "SELECT fiber_id, outcome, confirmed_at, last_seen FROM runs WHERE agent_name = ? AND fiber_id = ? AND confirmed_at IS NOT NULL",
      [name, held],
      (r) => r.length === 1,
    );
    expect(confirmed[0]!.outcome).toBeNull();
    // Reconciliation observes: it never moves last_seen, so "confirmed" means confirmed after the last event.
    expect(confirmed[0]!.last_seen).toBe(agedLastSeen);
    expect(confirmed[0]!.confirmed_at!).toBeGreaterThanOrEqual(confirmed[0]!.last_seen);

    const incidentId = fiberIncidentId("LossyAgent", name, gone);
    // Reconciliation closes it beside the SDK's own word (which stays open): the overlay, and the shown status.
    const incident = await pollRows<{ status: string; reason: string | null; closed_by: string; closed_by_reason: string }>(
      "SELECT status, reason, closed_by, closed_by_reason FROM incidents WHERE incident_id = ? AND closed_by IS NOT NULL",
      [incidentId],
      (r) => r.length === 1,
    );
    expect(incident[0]).toEqual({
      status: "open",
      reason: null,
      closed_by: "ended_unreported",
      closed_by_reason: "the fiber's row is gone; how recovery ended was not reported",
    });
    expect(await getIncident(env.DB, incidentId)).toMatchObject({
      status: "ended_unreported",
      sdkStatus: "open",
      closedByReason: "the fiber's row is gone; how recovery ended was not reported",
    });

    // The held fiber keeps the agent "running", so its session is confirmed by nothing and stays as reported.
    const session = await env.DB.prepare("SELECT status FROM sessions WHERE agent_name = ?").bind(name).first<{ status: string }>();
    expect(session?.status).toBe("running");

    // Each finding is an event on the agent's timeline, for the drill-downs.
    const found = await pollRows<{ type: string; payload: string }>(
      "SELECT type, payload FROM events WHERE agent_name = ? AND type IN ('run.reconciled', 'incident.reconciled')",
      [name],
      (r) => r.length === 3,
    );
    expect(found.map((e) => [e.type, JSON.parse(e.payload).finding]).sort()).toEqual([
      ["incident.reconciled", "not_recovering"],
      ["run.reconciled", "confirmed_running"],
      ["run.reconciled", "ended_unreported"],
    ]);

    // The overview counts the held fiber as confirmed by the agent, apart from the unconfirmed.
    const overview = await getOverview("viewer");
    expect(overview.status).toBe(200);
    // The cell's figure links to the confirmed running fibers (data-figure: the number it shows).
    expect(Number(/data-testid="confirmed-fiber"><a [^>]*data-figure="(\d+)"/.exec(overview.text)?.[1])).toBeGreaterThanOrEqual(1);
  });

  it("closes the session once the agent is idle; the confirmed run ends with its own reported outcome", async () => {
    const stub = await getAgentByName(env.LossyAgent, name);
    await stub.release();
    // The held fiber's real end arrives: its own outcome, not a reconciliation's.
    // A healthy completion: the row leaves D1 with it, and the console reads the run from R2.
    await pollRunRows<{ fiber_id: string; outcome: string | null }>(
      name,
      (r) => r.fiber_id === held && r.outcome === "completed",
      (r) => r.length === 1,
    );

    await age(name, 11 * MIN);
    // The agent was asked in the last pass: a pass skips it until the reconcile age has passed again.
    await env.DB.prepare("UPDATE reconciliations SET asked_at = asked_at - ? WHERE agent_name = ?")
      .bind(11 * MIN, name)
      .run();
    await reconcileCron();
    const s = await pollRows<{ status: string; last_event_type: string }>(
      "SELECT status, last_event_type FROM sessions WHERE agent_name = ? AND status != 'running'",
      [name],
      (r) => r.length === 1,
    );
    // The finding is a status, not the session's last event.
    expect(s[0]).toEqual({ status: "ended_unreported", last_event_type: "session.status_running" });
    // It left D1 when it completed, and reconciliation did not bring it back as missing: the console reads it from R2.
    expect(await runRow(name, held)).toBeNull();
    expect((await runRowsOf(name)).find((r) => r.fiber_id === held)?.outcome).toBe("completed");
  });
});

describe("reconciliation when an agent page is viewed", () => {
  it("closes a run whose end was lost once it is older than a minute, from what the page just read", async () => {
    const name = `lossy-page-${uid()}`;
    const lost = await (await getAgentByName(env.LossyAgent, name)).runLosingTheEnd();
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = ? AND snapshot_preview IS NOT NULL", [name, lost], (r) => r.length === 1);

    // Seconds old: its end may still be in flight, so a view does not judge it.
    expect((await getText(`/agents/LossyAgent/${name}`, "viewer")).status).toBe(200);
    await scheduler.wait(300);
    expect((await runRow(name, lost))?.outcome).toBeNull();

    await age(name, 2 * MIN);
    const page = await getText(`/agents/LossyAgent/${name}`, "viewer");
    expect(page.status).toBe(200);
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = ? AND outcome = 'ended_unreported'", [name, lost], (r) => r.length === 1);
    // The next view says when it was asked and what came of it.
    const again = await getText(`/agents/LossyAgent/${name}`, "viewer");
    const reconciled = mustTestId(again.text, "reconciled").attrs;
    expect(reconciled["data-findings"]).toBe("1");
    // Asked by the first view, seconds ago.
    expect(Date.now() - Number(reconciled["data-asked-at"])).toBeLessThan(60_000);
  });
});

describe("reconciliation with an agent that cannot answer", () => {
  it("records why, leaves its work unconfirmed, and does not ask it again within the reconcile age", async () => {
    const name = `nomixin-${uid()}`;
    const stub = await getAgentByName(env.TelemetryOnlyAgent, name);
    await stub.work();
    // It completed healthily, so it left D1 (the console reads it from R2).
    const [done] = await pollRunRows<{
      outcome: string | null;
      fiber_id: string;
      agent_class: string;
      kind: string;
      name: string;
      first_seen: number;
      last_seen: number;
    }>(
      name,
      (r) => r.outcome === "completed",
      (r) => r.length === 1,
    );
    // A run the events left open (its end lost, as far as the console knows): its row as its start made it.
    const seen = done!.last_seen - 20 * MIN;
    await env.DB.prepare(
      "INSERT INTO runs (fiber_id, agent_class, agent_name, kind, name, first_seen, last_seen, listed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )
      .bind(done!.fiber_id, done!.agent_class, name, done!.kind, done!.name, done!.first_seen, seen, seen - (seen % 60_000))
      .run();

    await reconcileCron();
    const asked = await env.DB.prepare("SELECT asked_at, findings, error FROM reconciliations WHERE agent_name = ?")
      .bind(name)
      .first<{ asked_at: number; findings: number; error: string }>();
    // The refusal's message as the admin client gives it (it names the class and the missing mixin).
    expect(asked).toMatchObject({ findings: 0, error: expect.stringMatching(/^TelemetryOnlyAgent .*withAdminRpc/) });
    expect(await env.DB.prepare("SELECT outcome, confirmed_at FROM runs WHERE agent_name = ?").bind(name).first()).toEqual({
      outcome: null,
      confirmed_at: null,
    });

    await reconcileCron();
    const again = await env.DB.prepare("SELECT asked_at FROM reconciliations WHERE agent_name = ?").bind(name).first<{ asked_at: number }>();
    expect(again?.asked_at).toBe(asked!.asked_at);
  });
});

describe("POST /api/reconcile (the CLI's `reconcile`, and local dev's stand-in for the cron)", () => {
  it("runs a pass for an operator and says what it found; a viewer is refused", async () => {
    const name = `lossy-api-${uid()}`;
    const lost = await (await getAgentByName(env.LossyAgent, name)).runLosingTheEnd();
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = ? AND snapshot_preview IS NOT NULL", [name, lost], (r) => r.length === 1);
    await age(name, 11 * MIN);

    const viewer = await postForm(
      "/api/reconcile",
      "viewer",
      {},
      { csrf: csrfFromPage((await getOverview("viewer")).text), headers: { Accept: "application/json" } },
    );
    expect(viewer.status).toBe(403);
    expect((await runRow(name, lost))?.outcome).toBeNull();

    const res = await postForm(
      "/api/reconcile",
      "operator",
      {},
      { csrf: csrfFromPage((await getOverview("operator")).text), headers: { Accept: "application/json" } },
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      ok: true;
      value: { asked: number; findings: { agent: string; type: string; finding: string }[]; unanswered: unknown[] };
    };
    expect(body.value.findings).toContainEqual({ agent: `LossyAgent/${name}`, type: "run.reconciled", finding: "ended_unreported" });
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = ? AND outcome = 'ended_unreported'", [name, lost], (r) => r.length === 1);
  });
});
