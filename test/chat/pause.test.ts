import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleAdminClient } from "../../worker/admin-client";
import type { SdkRecoveryRecord } from "../fixtures/chat-agents";
import type { ModelStep } from "../fixtures/chat-model";
import { pollRows } from "../helpers";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { getText } from "../worker/routes/harness";
import { type ChatClass, type ChatStub, chatStub, until } from "./drive";

/**
 * Pausing recovery on chat agents (issue 18 item 3): the mixin honours the pause before every chat recovery through
 * the SDK's own hook, onChatRecovery. No answer of that hook holds a turn for later, so a paused chat recovery is
 * declined (`continue: false`): the model is not called again, the SDK records the recovery skipped, the agent
 * reports it (recovery.skipped_paused with the turn's ids) and the incident page says the pause stopped it. A resume
 * does not restart it. Without a pause the agent's own onChatRecovery decides, and the SDK recovers.
 */

const operator = { email: "oncall@example.com", role: "operator" as const };
const admin = () => consoleAdminClient(env, operator);
const uid = () => crypto.randomUUID().slice(0, 8);
const stall = (...chunks: string[]): ModelStep => ({ kind: "stall", chunks });
const text = (...chunks: string[]): ModelStep => ({ kind: "text", chunks });
/** Think's message for a declined recovery (what its submission records). */
const DECLINED = "Submission was interrupted and automatic continuation was declined.";

/** Evicts the agent mid-turn and wakes it through its alarm, where the SDK replays the interrupted turn. */
async function evictAndWake(cls: ChatClass, name: string): Promise<ChatStub> {
  await (await chatStub(cls, name)).evict().catch(() => {});
  const woken = await chatStub(cls, name);
  await runDurableObjectAlarm(woken as never);
  return woken;
}

/** The SDK's recovery record once it settled (skipped, completed and dropped, …); null when none settled in time. */
async function settledRecord(stub: ChatStub): Promise<SdkRecoveryRecord | null> {
  let rec: SdkRecoveryRecord | null = null;
  await until(async () => {
    const rs = await stub.recoveryRecords();
    rec = rs.find((r) => !["attempting", "scheduled"].includes(r.status)) ?? null;
    return rec !== null;
  }, 15_000);
  return rec;
}

/** Starts a turn that streams its first chunk, then stalls: the user turn's id (Think: its submission). */
async function streamingTurn(cls: ChatClass, stub: ChatStub, prompt: string): Promise<string> {
  if (cls === "ThinkChatFixture") {
    const r = await stub.submitAndStream(prompt);
    expect(r.streamed).toBe(true);
    return r.submissionId;
  }
  expect((await stub.sendAndStream(prompt)).streamed).toBe(true);
  const calls = await stub.modelCalls();
  return calls[calls.length - 1]!.requestId!;
}

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe.each(["ThinkChatFixture", "AiChatFixture"] as const)("pause recovery on a %s", (cls) => {
  it("declines the interrupted turn's recovery while paused (no model call, an event, the incident says so); resume does not restart it; unpaused, the agent's own hook decides", async () => {
    const name = `pause-chat-${uid()}`;
    const target = { agentClass: cls, agentName: name };
    let stub = await chatStub(cls, name);
    await stub.setScript([stall("The answer is"), stall("Second"), text(" done.")]);
    const turn = await streamingTurn(cls, stub, "what is the answer?");
    await pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", [cls, name], (r) => r.length === 1);

    const paused = await admin().action("pause_recovery", target, { reason: "retries run up the LLM bill", hours: 1 });
    expect(paused.ok).toBe(true);

    // Evicted mid-turn while paused: the SDK replays the turn and asks onChatRecovery, which the pause answers.
    stub = await evictAndWake(cls, name);
    const rec = (await settledRecord(stub))!;
    expect(rec).not.toBeNull();
    // The SDK's own record: the recovery was skipped because continuation was declined, on its first attempt.
    // Declining spends nothing past the interruption itself: attempt 1, one interrupted attempt (the eviction), and
    // the record is sealed, so no later attempt runs.
    expect(rec).toMatchObject({ status: "skipped", reason: "continue_disabled", attempt: 1, interruptedAttempts: 1 });
    expect(rec.recoveryRootRequestId ?? rec.requestId).toBe(turn);
    // No tokens: the model was called once (the original turn), never for a recovery; the agent's own hook was not asked.
    await scheduler.wait(500);
    expect(await stub.modelCalls()).toHaveLength(1);
    expect(await stub.recoveryHookCalls()).toEqual([]);
    expect(await stub.sdkLive()).toBe(0);
    if (cls === "ThinkChatFixture") expect(await stub.submission(turn)).toMatchObject({ status: "error", error: DECLINED });
    // What the turn streamed is kept (persist stays the SDK's default): the partial it continues from, or, for a retry
    // (AIChatAgent had not flushed a partial when evicted), the unanswered user message.
    const kind = (rec as SdkRecoveryRecord & { recoveryKind: string }).recoveryKind;
    expect((await stub.transcript()).at(-1)).toMatchObject(
      kind === "continue" ? { role: "assistant", text: "The answer is" } : { role: "user", text: "what is the answer?" },
    );
    // The agent's pause counts it.
    const status = await admin().status(target);
    expect(status.ok && status.value.recoveryPause).toMatchObject({ active: true, skipped: 1, held: [] });
    // Its telemetry, through the same status, ships from the woken instance (the page's telemetry line: shipping).
    expect(status.ok && status.value.telemetry).toMatchObject({ queueBound: true, failingSince: null, dropped: 0 });

    // An event with the turn's ids, not a silent skip; the incident keeps the SDK's word (skipped).
    await stub.settleTelemetry();
    const [ev] = await pollRows<{ incident_id: string; request_id: string; payload: string }>(
      "SELECT incident_id, request_id, payload FROM events WHERE agent_name = ? AND type = 'recovery.skipped_paused'",
      [name],
      (r) => r.length === 1,
    );
    expect(ev).toMatchObject({ incident_id: rec.incidentId, request_id: turn });
    expect(JSON.parse(ev!.payload)).toMatchObject({
      kind: "chat_turn",
      decision: "declined",
      attempt: 1,
      recoveryKind: kind,
      reason: "retries run up the LLM bill",
    });
    const [incident] = await pollRows<{ status: string; reason: string }>(
      "SELECT status, reason FROM incidents WHERE agent_name = ? AND incident_id = ?",
      [name, rec.incidentId],
      (r) => r.length === 1 && r[0]!.status !== "open",
    );
    expect(incident).toEqual({ status: rec.status, reason: rec.reason });
    await pollRows("SELECT 1 FROM recovery_pauses WHERE agent_name = ? AND skipped = 1", [name], (r) => r.length === 1);
    // The turn's run row and page: the SDK's word (its recovery skipped, continue_disabled), the pause's event on its timeline.
    const [run] = await pollRows<{ kind: string; outcome: string | null; reason: string | null }>(
      "SELECT kind, outcome, reason FROM runs WHERE agent_name = ? AND fiber_id = ?",
      [name, turn],
      (r) => r.length === 1 && r[0]!.outcome !== null,
    );
    expect(run).toEqual({ kind: "chat_turn", outcome: "recovery_skipped", reason: rec.reason });
    const runPage = await getText(`/runs/${encodeURIComponent(turn)}?agentClass=${cls}&agentName=${encodeURIComponent(name)}`, "viewer");
    expect(runPage.text).toContain('data-type="recovery.skipped_paused"');
    const page = await getText(`/incidents/${encodeURIComponent(rec.incidentId)}?agentClass=${cls}&agentName=${encodeURIComponent(name)}`, "viewer");
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/data-testid="incident-pause-skips" data-decision="declined" data-declined="1" data-held="0"/);

    // Resume: nothing was held, so nothing is recovered; the SDK's record stays skipped and the model is not called.
    const resumed = await admin().action("resume_recovery", target, { reason: "provider fixed" });
    expect(resumed.ok).toBe(true);
    expect(resumed.ok && resumed.value).toMatchObject({ noop: false, recovered: [], after: { pause: null, pendingRecovery: 0 } });
    await runDurableObjectAlarm(stub as never);
    await scheduler.wait(500);
    expect(await stub.modelCalls()).toHaveLength(1);
    expect((await stub.recoveryRecords()).find((r) => r.incidentId === rec.incidentId)).toMatchObject({ status: "skipped", reason: "continue_disabled" });
    if (cls === "ThinkChatFixture") expect(await stub.submission(turn)).toMatchObject({ status: "error", error: DECLINED });

    // Unpaused, the next interrupted turn goes to the agent's own onChatRecovery, and the SDK recovers it.
    const next = await streamingTurn(cls, stub, "and the second question?");
    stub = await evictAndWake(cls, name);
    expect(await until(async () => (await stub.modelCalls()).length >= 3, 15_000)).toBe(true);
    const asked = await stub.recoveryHookCalls();
    expect(asked).toHaveLength(1);
    expect(asked[0]).not.toBe(rec.incidentId);
    if (cls === "ThinkChatFixture") expect(await stub.waitSubmission(next, 15_000)).toMatchObject({ status: "completed" });
    expect(await until(async () => (await stub.transcript()).at(-1)?.text.endsWith(" done.") === true, 15_000)).toBe(true);
  });
});

describe("why a paused chat recovery is declined, not held (Think)", () => {
  it("a throw from onChatRecovery does not hold the turn: the incident is failed, the submission is left running, and the turn never runs again once the hook stops throwing", async () => {
    const name = `pause-throw-${uid()}`;
    let stub = await chatStub("ThinkChatFixture", name);
    await stub.setPolicy({ throwOnRecovery: true });
    await stub.setScript([stall("The answer is"), text(" never reached.")]);
    const turn = await streamingTurn("ThinkChatFixture", stub, "what is the answer?");
    stub = await evictAndWake("ThinkChatFixture", name);
    const rec = (await settledRecord(stub))!;
    expect(rec).toMatchObject({ status: "failed", reason: "fixture: onChatRecovery throws", attempt: 1 });
    expect(await stub.recoveryHookCalls()).toEqual([rec.incidentId]);
    // The hook stops throwing (as a resume would): neither the alarm nor a later wake asks it again or runs the model.
    await stub.setPolicy({ throwOnRecovery: false });
    await runDurableObjectAlarm(stub as never);
    stub = await evictAndWake("ThinkChatFixture", name);
    await scheduler.wait(2000);
    expect(await stub.recoveryHookCalls()).toEqual([]);
    expect(await stub.modelCalls()).toHaveLength(1);
    expect((await stub.recoveryRecords()).find((r) => r.incidentId === rec.incidentId)).toMatchObject({ status: "failed" });
    // Think's submission is left running with nothing to run it: a stuck turn, which a declined recovery avoids.
    expect(await stub.submission(turn)).toMatchObject({ status: "running" });
  });
});
