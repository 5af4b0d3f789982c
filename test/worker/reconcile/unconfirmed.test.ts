import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TailItem } from "@agent-oncall/telemetry/tail";
import { type Agent, getAgentByName } from "agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listedAt } from "../../../src/store/listed-at";
import { staleAgents } from "../../../src/store/read-models/open-work";
import type { Env } from "../../../worker/env";
import { ingestBatch } from "../../../worker/ingest/consumer";
import { reconcileStale } from "../../../worker/reconcile/pass";
import { handleTail } from "../../../worker/tail";
import { listenLikeATail, TAIL_CHANNELS } from "../../diagnostics-tail";
import { makeEvent } from "../../fixtures/events";
import { pollRows } from "../../helpers";
import { patient } from "../../patience";
import { truthStub } from "../../truth/drive";
import { publishEnvTeamKeys } from "../access-tokens";
import { csrfFromPage, getText, postForm } from "../routes/harness";

// On the tail path a managed fiber's `fiber:run:failed` reads the same for a throw, a cancel and a force idle, so the
// console shows its end as `unknown`, unconfirmed, until it reads the SDK's record. That read must not wait for
// someone to open the agent's page: the cron's pass visits agents with unconfirmed runs, and force idle reads its
// target back itself. Every expectation is the SDK's own public answer (inspectFiber), read in the same test.

const MIN = 60_000;
const SETTINGS = { afterMs: 10 * MIN, batch: 100, unknownAfterMs: 60 * MIN };
const uid = () => crypto.randomUUID().slice(0, 8);

type SdkFiber = { fiberId: string; status: string; error?: string | null; settledAt?: number | null };
type SdkTask = { runId: string; state: string; error?: { message: string } | null; settledAt?: number | null };
type Shown = { outcome: string | null; error: string | null; ended_at: number | null; outcome_at: number | null };
const shown = (agentName: string, runId: string) =>
  pollRows<Shown>(
    "SELECT outcome, error, ended_at, outcome_at FROM runs WHERE agent_name = ? AND fiber_id = ? AND outcome IS NOT NULL",
    [agentName, runId],
    (r) => r.length === 1,
  );
const shownAs = (agentName: string, runId: string, outcome: string) =>
  pollRows<Shown>(
    "SELECT outcome, error, ended_at, outcome_at FROM runs WHERE agent_name = ? AND fiber_id = ? AND outcome = ?",
    [agentName, runId, outcome],
    (r) => r.length === 1,
  );
const askedAt = async (agentName: string) =>
  (await env.DB.prepare("SELECT asked_at AS askedAt, error FROM reconciliations WHERE agent_name = ?")
    .bind(agentName)
    .first<{ askedAt: number; error: string | null }>()) ?? null;

/**
 * The tail, for one agent: what the SDK publishes for it, handed to the console's tail handler as one trace item
 * per step. Only this agent's messages: other files' agents share the runtime.
 */
const tail = listenLikeATail(TAIL_CHANNELS);
async function delivered(agentClass: string, agentName: string): Promise<void> {
  // What the step set going (a cancelled fiber's end) may publish just after the call returned.
  await tail.quiet();
  const all = tail.item({ durableObjectId: (env as unknown as Record<string, DurableObjectNamespace>)[agentClass]!.idFromName(agentName).toString() });
  tail.clear();
  const mine = (all.diagnosticsChannelEvents ?? []).filter((e) => (e.message as { name?: unknown } | undefined)?.name === agentName);
  if (mine.length) await handleTail([{ ...all, entrypoint: agentClass, diagnosticsChannelEvents: mine } as TailItem], env as Env);
}

beforeAll(async () => {
  await publishEnvTeamKeys();
});
afterAll(() => tail.stop());

describe("an unconfirmed end on the tail path", () => {
  it("a cancelled managed fiber reads unknown, then one cron pass (no page visit) reads it as the SDK records it", { timeout: patient(60_000) }, async () => {
    const K = "AdminTruthFiberAgent";
    const name = `unconfirmed-cancel-${uid()}`;
    const stub = await truthStub(K, name);
    const id = await stub.startManaged("hang");
    await delivered(K, name);
    await stub.cancelManaged(id, "the customer withdrew the sync");
    await delivered(K, name);

    const before = await shown(name, id);
    expect(before[0]!.outcome).toBe("unknown");

    const sdk = (await (stub as unknown as { sdkFiber(id: string): Promise<SdkFiber | null> }).sdkFiber(id))!;
    // The SDK's public record says it was cancelled (inspectFiber: aborted): the console must read "cancelled".
    expect(sdk.status).toBe("aborted");
    const expected = "cancelled";

    const pass = await reconcileStale(env, SETTINGS, Date.now());
    const mine = pass.find((p) => p.target.agentName === name);
    expect(mine, "the cron's pass visits the agent whose only doubt is an unconfirmed run").toBeDefined();
    expect(mine!.error).toBeNull();
    expect(mine!.findings.map((f) => f.type === "run.reconciled" && [f.runId, f.finding, f.state])).toEqual([[id, "ended", sdk.status]]);

    const after = await shownAs(name, id, expected);
    expect(after[0]).toMatchObject({ outcome: expected, error: sdk.error ?? null, ended_at: sdk.settledAt ?? null });

    // Nothing of it is unconfirmed any more: no later pass is due to visit it (read without asking anyone).
    expect((await staleAgents(env.DB, Date.now() + SETTINGS.afterMs, 1000)).filter((a) => a.agentName === name)).toEqual([]);
    await stub.retire().catch(() => {});
  });

  it("a failed Task reads failed with its error not known, then one cron pass reads the error the SDK records", { timeout: patient(60_000) }, async () => {
    const K = "AdminTruthTaskAgent";
    const name = `unconfirmed-task-${uid()}`;
    const stub = await truthStub(K, name);
    const id = await stub.startTask("fail");
    await delivered(K, name);
    // task:failed names only its error's class: the console does not claim a message it was not told.
    const before = await shown(name, id);
    expect(before[0]).toMatchObject({ outcome: "failed", error: null, outcome_at: 1 });

    const sdk = (await (stub as unknown as { sdkTask(id: string): Promise<SdkTask | null> }).sdkTask(id))!;
    expect(sdk.state).toBe("failed");
    const pass = await reconcileStale(env, SETTINGS, Date.now());
    expect(pass.find((p) => p.target.agentName === name)?.error).toBeNull();
    const after = await pollRows<Shown>(
      "SELECT outcome, error, ended_at, outcome_at FROM runs WHERE agent_name = ? AND fiber_id = ? AND error IS NOT NULL",
      [name, id],
      (r) => r.length === 1,
    );
    expect(after[0]).toMatchObject({ outcome: "failed", error: sdk.error?.message, ended_at: sdk.settledAt ?? null });
    await stub.retire().catch(() => {});
  });

  it("force idle reads its target back: the run shows what the SDK records, without the cron", { timeout: patient(60_000) }, async () => {
    const K = "AdminTruthFiberAgent";
    const name = `unconfirmed-idle-${uid()}`;
    const stub = await truthStub(K, name);
    const id = await stub.startManaged("hang");
    await delivered(K, name);
    await pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", [K, name], (r) => r.length === 1);

    const page = await getText(`/agents/${K}/${encodeURIComponent(name)}`, "operator");
    // The page's own reconciliation is not what this is about: its visit is recorded, and the run is still open.
    const visited = await askedAt(name);
    const res = await postForm(
      "/actions/force-idle",
      "operator",
      { agentClass: K, agentName: name, reason: "sync stuck for an hour" },
      { csrf: csrfFromPage(page.text), headers: { Accept: "application/json" } },
    );
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { ok: boolean; value: { ended: { runId: string; how: string }[] } };
    expect(answer.ok).toBe(true);
    expect(answer.value.ended.map((r) => [r.runId, r.how])).toEqual([[id, "cancelled"]]);
    await delivered(K, name);

    const sdk = (await (stub as unknown as { sdkFiber(id: string): Promise<SdkFiber | null> }).sdkFiber(id))!;
    // Force idle cancels it: inspectFiber says aborted, the console must read "cancelled".
    expect(sdk.status).toBe("aborted");
    const expected = "cancelled";
    // No cron pass ran: the action's own read-back closed the run as the SDK records it, dated when the SDK settled it.
    const after = await shownAs(name, id, expected);
    expect(after[0]).toMatchObject({ outcome: expected, ended_at: sdk.settledAt ?? null });
    expect((await askedAt(name))!.askedAt).toBeGreaterThan(visited?.askedAt ?? 0);

    // The audit keeps the action whole: actor, reason, target, before and after, its result.
    const audit = await env.DB.prepare(
      "SELECT actor, reason, target_class, result, before IS NOT NULL AS hasBefore, after IS NOT NULL AS hasAfter FROM audit_log WHERE target_name = ? AND action = 'force_idle'",
    )
      .bind(name)
      .all();
    expect(audit.results).toEqual([
      { actor: "operator@example.com", reason: "sync stuck for an hour", target_class: K, result: "ok", hasBefore: 1, hasAfter: 1 },
    ]);
    await stub.retire().catch(() => {});
  });

  it("an agent with no admin package keeps its unconfirmed run unknown, and is asked at most once per window", { timeout: patient(60_000) }, async () => {
    const K = "TailHookAgent";
    const name = `unconfirmed-bare-${uid()}`;
    const agent = await getAgentByName(env.TailHookAgent as never, name);
    // A managed fiber on a plain Agent (no package of ours), cancelled by the agent itself.
    const id = await runInDurableObject(agent as never, async (a: Agent<Env>) => {
      const r = await a.startFiber("bare-sync", async (ctx) => {
        await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
      });
      return r.fiberId;
    });
    await delivered(K, name);
    await runInDurableObject(agent as never, (a: Agent<Env>) => a.cancelFiber(id, "no longer needed"));
    await delivered(K, name);
    expect((await shown(name, id))[0]!.outcome).toBe("unknown");

    const now = Date.now();
    const first = await reconcileStale(env, SETTINGS, now);
    const mine = first.find((p) => p.target.agentName === name);
    expect(mine?.error).toBe("TailHookAgent has no admin mixin (withAdminRpc)");
    expect(mine?.findings).toEqual([]);
    // Within the window it is not asked again; once the window has passed, it is due once more (read without asking:
    // a pass dated that late would ask every agent of the runtime).
    expect((await reconcileStale(env, SETTINGS, now + 1)).find((p) => p.target.agentName === name)).toBeUndefined();
    const due = async (at: number) => (await staleAgents(env.DB, at - SETTINGS.afterMs, 1000)).some((a) => a.agentName === name);
    expect(await due(now + SETTINGS.afterMs - 1)).toBe(false);
    expect(await due(now + SETTINGS.afterMs + 1)).toBe(true);
    // Nothing can say how it ended: it stays unknown, never a guess.
    expect((await shown(name, id))[0]!.outcome).toBe("unknown");
    await runInDurableObject(agent as never, async (_a: unknown, state: DurableObjectState) => {
      await state.storage.deleteAlarm();
      await state.storage.deleteAll();
    });
  });
});

describe("what the unconfirmed index costs D1 (rows written, every index entry counted: D1 bills them)", () => {
  it("an ordinary end writes no entry in it; an unconfirmed end writes one, and the agent's dated record leaves it unbilled", async () => {
    const agentName = `unconfirmed-cost-${uid()}`;
    // Early in a minute, so every report falls in it (a report in the next minute also moves listed_at).
    const t = listedAt(Date.now() - 180_000) + 1000;
    const one = async (e: ReturnType<typeof makeEvent>) => (await ingestBatch(env.DB, [{ id: crypto.randomUUID(), body: e }])).rowsWrittenByTable.runs;
    const managed = { fiberName: "sync", managed: true };
    // A managed fiber that completes: its start (the row, 4 list entries, the open-runs entry) and its end (the row
    // alone), as for any run: the partial index's condition does not hold, so it costs nothing here.
    expect(await one(makeEvent("fiber.started", managed, { agentName, corr: { fiberId: "ok" }, time: t }))).toBe(6);
    expect(await one(makeEvent("fiber.completed", { ...managed, fiberStatus: "completed" }, { agentName, corr: { fiberId: "ok" }, time: t + 1000 }))).toBe(1);
    // One whose end the tail could not say whole: the row, its kind + outcome entry, and its runs_unconfirmed entry.
    expect(await one(makeEvent("fiber.started", managed, { agentName, corr: { fiberId: "doubt" }, time: t }))).toBe(6);
    expect(await one(makeEvent("fiber.failed", { ...managed, error: "aborted" }, { agentName, corr: { fiberId: "doubt" }, time: t + 1000 }))).toBe(3);
    // Reconciliation reads the agent's record (cancelled, dated): the row and its kind + outcome entry; leaving
    // runs_unconfirmed is not billed.
    const reconciled = makeEvent(
      "run.reconciled",
      {
        kind: "managed_fiber",
        runId: "doubt",
        finding: "ended",
        detail: "the agent records this managed fiber as aborted",
        state: "aborted",
        endedAt: t + 1000,
      },
      { agentName, corr: { fiberId: "doubt" }, time: t + 2000 },
    );
    expect(await one(reconciled)).toBe(2);
    const row = await env.DB.prepare("SELECT outcome, outcome_at FROM runs WHERE agent_name = ? AND fiber_id = 'doubt'").bind(agentName).first();
    expect(row).toEqual({ outcome: "cancelled", outcome_at: t + 1000 });
  });
});
