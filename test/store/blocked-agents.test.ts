import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { listAgents } from "../../src/store/read-models/agents";
import { blockedAgents, TELEMETRY_QUIET_MS } from "../../src/store/read-models/blocked-agents";
import { isBadRequest } from "../../src/store/read-models/errors";
import { overviewCounts } from "../../src/store/read-models/overview";
import { recordReconciliation } from "../../src/store/reconciliations";
import { makeEvent } from "../fixtures/events";
import { empty, ingest, rejection, walk } from "./store-helpers";

/**
 * The agents whose events cannot reach the console (blocked-agents.ts): what reconciliation's last answer from
 * each said of its pipeline, against what the console heard from it since. Agents report through the real ingest
 * path; their answers are recorded as the reconciler records them.
 */

const MIN = 60_000;
const NOW = Math.floor(Date.now() / MIN) * MIN - 30 * MIN;
const CLS = "ProbeAgent";

/** An agent the console last heard from at `lastSeen`. */
const heard = (agentName: string, lastSeen: number) =>
  ingest([makeEvent("fiber.started", { fiberName: "etl" }, { agentName, corr: { fiberId: `f-${agentName}` }, time: lastSeen })]);

/** Reconciliation asked it at `askedAt`: it answered with its pipeline state (null: shipping), or `error`. */
const asked = (agentName: string, askedAt: number, pipeline: "no_queue" | "failing" | null, error: string | null = null) =>
  recordReconciliation(env.DB, { agentClass: CLS, agentName, askedAt, findings: 0, error, pipeline });

const names = async (opts: Parameters<typeof blockedAgents>[1] = {}) => (await blockedAgents(env.DB, opts)).items.map((a) => a.agentName);

beforeAll(async () => {
  await empty(env.DB);
  // No Queue binding, nothing heard since the ask: blocked.
  await heard("no-queue", NOW - 20 * MIN);
  await asked("no-queue", NOW - 10 * MIN, "no_queue");
  // No Queue binding when asked, but events arrived after: its Worker got its binding back.
  await heard("healed", NOW - 5 * MIN);
  await asked("healed", NOW - 10 * MIN, "no_queue");
  // Sends failing, and nothing heard for TELEMETRY_QUIET_MS before the ask: blocked (the alert's rule).
  await heard("failing-quiet", NOW - 20 * MIN);
  await asked("failing-quiet", NOW - 8 * MIN, "failing");
  // Sends failing, but heard a minute before the ask: a blip the next retry may get through.
  await heard("failing-blip", NOW - 9 * MIN);
  await asked("failing-blip", NOW - 8 * MIN, "failing");
  // Said so, then answered that it ships: no longer blocked.
  await heard("fixed", NOW - 20 * MIN);
  await asked("fixed", NOW - 12 * MIN, "no_queue");
  await asked("fixed", NOW - 6 * MIN, null);
  // Said so, then could not answer: what it said stands (nothing showed it healed).
  await heard("silent", NOW - 20 * MIN);
  await asked("silent", NOW - 12 * MIN, "no_queue");
  await asked("silent", NOW - 4 * MIN, null, "the agent did not answer within 5 s");
  // Always shipped.
  await heard("fine", NOW - 20 * MIN);
  await asked("fine", NOW - 4 * MIN, null);
});

describe("agents whose events cannot reach the console", () => {
  it("lists those whose last answer said so and that sent nothing since, newest ask first, with what they said", async () => {
    const page = await blockedAgents(env.DB);
    expect(page.items.map((a) => [a.agentName, a.pipeline, a.askedAt])).toEqual([
      ["silent", "no_queue", NOW - 4 * MIN],
      ["failing-quiet", "failing", NOW - 8 * MIN],
      ["no-queue", "no_queue", NOW - 10 * MIN],
    ]);
    expect(page.items[0]).toMatchObject({ agentClass: CLS, lastSeen: NOW - 20 * MIN });
    expect(page.next).toBeNull();
    expect(TELEMETRY_QUIET_MS).toBe(5 * MIN);
  });

  it("the overview counts exactly that list", async () => {
    const counts = await overviewCounts(env.DB, NOW);
    expect(counts.agentsBlocked).toEqual({ n: 3, capped: false });
    expect((await overviewCounts(env.DB, NOW, 2)).agentsBlocked).toEqual({ n: 2, capped: true });
  });

  it("drops an agent once an event from it arrives", async () => {
    await heard("no-queue", NOW - 1 * MIN);
    expect(await names()).toEqual(["silent", "failing-quiet"]);
    expect((await overviewCounts(env.DB, NOW)).agentsBlocked.n).toBe(2);
  });

  it("pages by keyset, narrows to a class, and refuses a cursor of another list with a sentence", async () => {
    const all = await walk(
      (p) => blockedAgents(env.DB, { limit: p.limit, after: p.cursor }),
      1,
      (a) => a.agentName,
    );
    expect(all.map((a) => a.agentName)).toEqual(["silent", "failing-quiet"]);
    expect(await names({ agentClass: CLS })).toEqual(["silent", "failing-quiet"]);
    expect(await names({ agentClass: "SupportAgent" })).toEqual([]);
    const agentsCursor = (await listAgents(env.DB, {}, { limit: 1 })).next;
    const other = await rejection(blockedAgents(env.DB, { after: agentsCursor }));
    expect(isBadRequest(other)).toBe(true);
    expect(other.message).toContain("belongs to another list");
  });

  it("reads the flagged agents only: a healthy answer leaves no index entry to scan", async () => {
    const page = await blockedAgents(env.DB);
    // Five agents are flagged (healed, failing-blip and no-queue were heard since): each is one index row and one agents row.
    const flagged = await env.DB.prepare("SELECT COUNT(*) AS n FROM reconciliations WHERE pipeline IS NOT NULL").first<{ n: number }>();
    expect(flagged?.n).toBe(5);
    expect(page.rowsRead).toBeLessThanOrEqual(2 * 5);
  });
});
