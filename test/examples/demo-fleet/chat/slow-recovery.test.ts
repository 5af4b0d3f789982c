import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { startSlowRecovery } from "../../../../examples/demo-fleet/src/demo/chat-driver";
import { patient } from "../../../patience";
import { publishEnvTeamKeys } from "../../../worker/access-tokens";
import { call } from "../../../worker/routes/harness";

/**
 * The demo fleet's slow recovery (chat-driver.ts startSlowRecovery), at a 1.5 s stall watchdog instead of 45 s:
 * the overview's "likely to exhaust" card lists its incident before the SDK exhausts it, and the driver starts no
 * second one while it runs.
 */

type Card = { items: { incidentId: string; attempts: number; forecast: { at: number } }[] };
type Row = { incident_id: string; status: string; status_at: number; reason: string | null };

const overviewCard = async () =>
  ((await (await call("/", { as: "viewer", headers: { Accept: "application/json" } })).json()) as { exhausting: Card }).exhausting;

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("the demo fleet's slow recovery", () => {
  it("is forecast on the overview before it exhausts by its attempt cap", async () => {
    const agentName = `slow-${crypto.randomUUID().slice(0, 8)}`;
    const opts = { agentName, stallTimeoutMs: 1_500, maxAttempts: 4 };
    expect(await startSlowRecovery(env as never, opts)).toContain("started");
    expect(await startSlowRecovery(env as never, opts)).toContain("under way");

    const end = Date.now() + patient(60_000);
    let shownAt: number | null = null;
    let row: Row | null = null;
    while (Date.now() < end) {
      row = await env.DB.prepare("SELECT incident_id, status, status_at, reason FROM incidents WHERE agent_name = ? AND kind = 'chat'")
        .bind(agentName)
        .first<Row>();
      if (row && row.status !== "open") break;
      if (row && shownAt === null && (await overviewCard()).items.some((i) => i.incidentId === row!.incident_id)) shownAt = Date.now();
      await scheduler.wait(200);
    }
    expect(row?.status).toBe("exhausted");
    expect(row?.reason).toBe("max_attempts_exceeded");
    expect(shownAt).not.toBeNull();
    expect(shownAt!).toBeLessThan(row!.status_at);
  });
});
