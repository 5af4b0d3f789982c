import { env } from "cloudflare:workers";
import { CHAT_TURN_STATUS, chatTurnState, mapSdkState } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { consoleAdminClient } from "../../worker/admin-client";
import { pollRows, pollRunRows } from "../helpers";
import { patient } from "../patience";
import { chatStub, until } from "./drive";

/**
 * Force idle on a chat agent mid-turn (issue 15): cancelling the Tasks run that carries a turn does not stop it, so
 * force idle stops the turn the SDK's own way (Think: cancelSubmission; any turn: its request's abort) and then says
 * what the SDK records. The model stream stops within 5 s, the next turn does not wait, and the console's run row,
 * the action's answer and the SDK agree.
 */

const operator = { email: "oncall@example.com", role: "operator" as const };
const uid = () => crypto.randomUUID().slice(0, 8);
/** 100 chunks, 200 ms apart: 20 s of streaming unless stopped. */
const SLOW = { kind: "text" as const, chunks: Array.from({ length: 100 }, (_, i) => `word${i} `), delayMs: 200 };
const registered = (cls: string, name: string) => pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", [cls, name], (r) => r.length === 1);
type RunRow = { outcome: string | null; reason: string | null; attempt: number | null; kind: string };
/** The run as the console holds it: D1's row, or, once it completed healthily and left D1, folded from R2. */
const runRow = (name: string, id: string, check: (r: RunRow) => boolean) =>
  pollRunRows<RunRow & { fiber_id: string }>(
    name,
    (r) => r.fiber_id === id,
    (r) => r.length === 1 && check(r[0]!),
  ).then((r) => r[0]!);

describe("force idle on a Think agent mid-turn", () => {
  it("cancels the submission, stops the model stream within 5 s, lets the next turn start at once, and reports what the SDK records", async () => {
    const name = `fi-think-${uid()}`;
    const stub = await chatStub("ThinkChatFixture", name);
    await stub.setScript([SLOW, { kind: "text", chunks: ["Short answer."] }]);
    const { submissionId } = await stub.submit("write the long report");
    await until(async () => (await stub.meter()).chunks >= 3, 10_000);
    await registered("ThinkChatFixture", name);

    const t0 = Date.now();
    const r = await consoleAdminClient(env, operator).forceIdle({ agentClass: "ThinkChatFixture", agentName: name }, { reason: "report turn stuck" });
    const actionMs = Date.now() - t0;
    expect(r.ok).toBe(true);
    if (!r.ok) return;

    // The stream stopped: the model was aborted, and nothing was pulled from it after the action (watched for 2 s).
    const at = await stub.meter();
    await scheduler.wait(2000);
    const later = await stub.meter();
    expect(later.chunks).toBe(at.chunks);
    expect(at.chunks).toBeLessThan(SLOW.chunks.length);
    expect(at.aborted).toBe(1);
    // 5 s on a quiet machine (test/patience.ts); a stream that is not stopped runs on for 120 s.
    expect(at.lastChunkAt! - t0).toBeLessThanOrEqual(patient(5000));
    expect(actionMs).toBeLessThan(patient(5000));

    // The SDK's own record: the submission is aborted, with the operator's reason.
    const sub = (await stub.submission(submissionId))!;
    expect(sub).toMatchObject({ status: "aborted", error: "force idle: report turn stuck" });
    // The action says the same: the agent's own verdict, and the console's read-back of the submission afterwards.
    expect(r.value.ended).toEqual([
      expect.objectContaining({
        kind: "chat_turn",
        runId: submissionId,
        ref: submissionId,
        stopped: true,
        how: "cancelled",
        why: "submission_cancelled",
        sdkStatus: "aborted",
      }),
    ]);
    expect(r.value).toMatchObject({ result: "ok", evicted: false, notice: null, after: { verified: true, status: "idle", busy: [] } });
    expect(r.value.after.checks).toEqual([
      { id: submissionId, kind: "chat_turn", name: null, now: "stopped", sdkState: "aborted", source: "inspectSubmission" },
    ]);

    // The next turn runs at once (Think's own timestamps: it started right after it was submitted).
    const next = await stub.submit("and now a short one");
    expect(await stub.waitSubmission(next.submissionId, 10_000)).toMatchObject({ status: "completed" });
    const nextSub = (await stub.submission(next.submissionId))!;
    expect(nextSub.startedAt! - nextSub.createdAt).toBeLessThan(2000);

    // The console's run row agrees with the SDK: the turn's own finish (the SDK's word, `aborted`) supersedes force
    // idle's report of it, which says the same once read back (the operator's reason is on the submission and the audit).
    // Force idle's report can land first (the agent's events wait up to a flush): wait for the turn's own finish.
    const row = await runRow(name, submissionId, (x) => x.reason === "aborted");
    expect(row).toMatchObject({ kind: "chat_turn", outcome: chatTurnState(sub.status)!.outcome, reason: "aborted", attempt: 1 });
    const [idled] = await pollRows<{ payload: string }>(
      "SELECT payload FROM events WHERE agent_name = ? AND type = 'run.force_idled'",
      [name],
      (r) => r.length === 1,
    );
    expect(JSON.parse(idled!.payload)).toMatchObject({
      kind: "chat_turn",
      runId: submissionId,
      stopped: true,
      how: "cancelled",
      sdkState: "aborted",
      reason: "report turn stuck",
    });
    await runRow(name, next.submissionId, (x) => x.outcome === "completed");
    const audit = await env.DB.prepare("SELECT result FROM audit_log WHERE target_name = ? AND action = 'force_idle'").bind(name).all<{ result: string }>();
    expect(audit.results).toEqual([{ result: "ok" }]);
  });

  it("also cancels a submission still queued behind the running one, which then never runs", async () => {
    const name = `fi-queue-${uid()}`;
    const stub = await chatStub("ThinkChatFixture", name);
    await stub.setScript([SLOW, { kind: "text", chunks: ["never reached"] }]);
    const first = await stub.submit("the long one");
    const queued = await stub.submit("the queued one");
    await until(async () => (await stub.meter()).chunks >= 2, 10_000);
    await registered("ThinkChatFixture", name);
    const r = await consoleAdminClient(env, operator).forceIdle({ agentClass: "ThinkChatFixture", agentName: name }, { reason: "stop everything" });
    // The running one is cancelled; the queued one never started, and says so.
    expect(r.ok && r.value.ended.map((e) => [e.runId, e.stopped, e.why, e.sdkStatus])).toEqual(
      expect.arrayContaining([
        [first.submissionId, true, "submission_cancelled", "aborted"],
        [queued.submissionId, true, "submission_dropped", "aborted"],
      ]),
    );
    await scheduler.wait(500);
    expect((await stub.submissions()).map((s) => [s.submissionId, s.status]).sort()).toEqual(
      [
        [first.submissionId, "aborted"],
        [queued.submissionId, "aborted"],
      ].sort(),
    );
    expect((await stub.modelCalls()).length).toBe(1); // the queued one never called the model
  });
});

describe("force idle on an AIChatAgent mid-turn", () => {
  it("aborts the turn's request (no submissions there), stops its stream, and the turn reports aborted", async () => {
    const name = `fi-ai-${uid()}`;
    const stub = await chatStub("AiChatFixture", name);
    await stub.setScript([SLOW, { kind: "text", chunks: ["Short answer."] }]);
    await stub.sendAndStream("write the long report");
    await until(async () => (await stub.meter()).chunks >= 3, 10_000);
    const turnId = (await stub.modelCalls())[0]!.requestId!;
    await registered("AiChatFixture", name);

    const r = await consoleAdminClient(env, operator).forceIdle({ agentClass: "AiChatFixture", agentName: name }, { reason: "stuck" });
    expect(r.ok && r.value.ended).toEqual([
      expect.objectContaining({ kind: "chat_turn", runId: turnId, stopped: true, how: "cancelled", why: "chat_aborted" }),
    ]);
    // Read back by the Tasks run that carried it: gone once the aborted turn ended (AIChatAgent keeps no record of a turn).
    expect(r.ok && r.value).toMatchObject({ result: "ok", after: { checks: [expect.objectContaining({ now: "stopped", sdkState: "gone" })] } });
    const at = await stub.meter();
    await scheduler.wait(1500);
    expect((await stub.meter()).chunks).toBe(at.chunks);
    // The SDK's word for the turn: what saveMessages returned.
    await until(async () => (await stub.results()).length === 1, 5_000);
    expect(await stub.results()).toEqual([{ requestId: turnId, status: "aborted" }]);
    // Until the turn's own finish arrives (up to a flush later), the row shows force idle's fallback: wait for the SDK's word.
    const sdkOutcome = mapSdkState(CHAT_TURN_STATUS, "aborted")!.outcome;
    expect(await runRow(name, turnId, (x) => x.outcome === sdkOutcome)).toMatchObject({ outcome: sdkOutcome });
  });
});
