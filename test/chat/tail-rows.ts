import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { ATTEMPT_EVENT_TYPES } from "../../src/store/read-models/incidents";
import { consoleAdminClient } from "../../worker/admin-client";
import type { Env } from "../../worker/env";
import { reconcileAgent } from "../../worker/reconcile/agent";
import { handleTail } from "../../worker/tail";
import { listenLikeATail, TAIL_CHANNELS } from "../diagnostics-tail";
import type { SdkRecoveryRecord } from "../fixtures/chat-agents";
import type { ModelCall, ModelStep } from "../fixtures/chat-model";
import type { TailChatPolicy } from "../fixtures/tail-chat-agents";
import { pollRows } from "../helpers";
import { patient } from "../patience";
import { streamItem, type TailPath } from "../stream-tail";
import { type Cell, compareViews, scenarioTable } from "../truth/compare";
import { CHAT_TURN_EXPECTED, expectedFor, recoveryRecordExpected } from "../truth/expected-states";
import { matrixHooks } from "../truth/matrix-hooks";
import { consoleView, type OverviewFigures, overviewFigures, type View } from "../truth/observe";
import { settle } from "../truth/settle";
import { call } from "../worker/routes/harness";

/**
 * The chat rows of the truth matrix on agents captured by the TAIL alone (issue 34): plain Think and AIChatAgent
 * agents and Think sub-agents with no telemetry package of ours (test/fixtures/tail-chat-agents.ts). What reaches the console is what
 * the SDK publishes on every `agents:*` diagnostics channel, heard here as it is published and handed to the
 * console's tail handler (worker/tail.ts) with the real Queue and ingest. The console's JSON is then compared with
 * the SDK's own records (recovery records, what `saveMessages` returned, the scripted model's calls), through the
 * expectations written in test/truth/expected-states.ts, never through the product's mapping.
 *
 * Each tail path runs in a test file of its own (tail-matrix.test.ts: the classic handler, one trace item per step;
 * tail-stream-matrix.test.ts: the streaming handler, each step's invocation streamed with one flush per message by
 * test/stream-tail.ts), each in a fresh runtime.
 *
 * Trace items: the runtime sends one per invocation; here the agents run in the test's isolate, so one item is built
 * per step of a row (a turn sent, an eviction, a wake, an alarm), holding that step's messages. A step is one unit of
 * work as the agent sees it, and a recovery spans several of them, as it spans invocations in production: the
 * console must fold a turn's attempts across items, never within one only.
 *
 * A plain top-level AIChatAgent publishes no request id for its turns (its carrier Task is `chat_<nonce>` and
 * `message:response` is empty): the console names its turn by the carrier of the turn's first run
 * (src/telemetry/tail-chat-turns.ts). Its rows take that name from the SDK's own record of the carrier (the running
 * Tasks run whose metadata names the request, read by the fixture while the model is called), and the rest from
 * the same records as Think's rows.
 */

const tail = listenLikeATail(TAIL_CHANNELS);
/** The handler this file's rows run on: set once, by chatTailMatrix, before any row runs. */
let path: TailPath = "classic";

/**
 * Hands what the SDK published since the last step to the console's tail handler, as one trace item (classic) or
 * one streamed invocation (streaming): of the given Durable Object where the row knows it (a facet's own id), else
 * of a stand-in id.
 */
async function deliver(of: { durableObjectId?: string } = {}): Promise<void> {
  const item = tail.item(of);
  tail.clear();
  if (!item.diagnosticsChannelEvents?.length) return;
  if (path === "streaming") await streamItem(item, env as Env);
  else await handleTail([item], env as Env);
}

const uid = () => crypto.randomUUID().slice(0, 8);
const text = (chunks: string[]): ModelStep => ({ kind: "text", chunks });
const stall = (...chunks: string[]): ModelStep => ({ kind: "stall", chunks });

type Fault = "none" | "abort" | "stalls" | "force-idle";
const SCRIPTS: Record<Fault, { steps: ModelStep[]; policy: TailChatPolicy }> = {
  none: { steps: [text(["All ", "green."])], policy: {} },
  // Evicted mid-stream; the next wake continues the turn.
  abort: { steps: [stall("The answer is"), text([" forty-two."])], policy: {} },
  // Every call stalls; the stall watchdog routes each into recovery until the SDK gives up (max_attempts_exceeded).
  stalls: { steps: [stall("Restarting"), stall(), stall(), stall()], policy: { stallTimeoutMs: 200, maxAttempts: 2 } },
  // A long answer streamed slowly (20 s unless stopped): the console's audited force idle stops it mid-turn.
  "force-idle": {
    steps: [{ kind: "text", chunks: Array.from({ length: 100 }, (_, i) => `word${i} `), delayMs: 200 }],
    policy: {},
  },
};

/** What a driver hands the comparison: the agent as the console keys it, and the SDK's records of its one user turn. */
type Subject = {
  agentClass: string;
  /** The console's key name: a sub-agent's ancestry where its Worker publishes it (docs/capture.md). */
  agentName: string;
  /**
   * `id`: the console's run id (the request id, or for a top-level AIChatAgent the carrier Task of the turn's first
   * run); `requestId` where it differs: the SDK's request id of that first run.
   */
  turns: { id: string; requestId?: string; userMessageId: string; returned?: string }[];
  recovered: boolean;
  records: SdkRecoveryRecord[];
  calls: ModelCall[];
  /** What an action the row took answered. */
  action?: unknown;
};

const OPERATOR = { email: "truth@example.com", role: "operator" } as const;

type HubStub = {
  helperObjectId(kind: "admin" | "bare", helper: string): Promise<string>;
  ownWork(): Promise<void>;
  helperSetup(kind: "admin" | "bare", helper: string, steps: ModelStep[], policy?: TailChatPolicy): Promise<void>;
  helperSend(kind: "admin" | "bare", helper: string, text: string): Promise<{ requestId: string; status: string; userMessageId: string }>;
  helperSendAndStream(kind: "admin" | "bare", helper: string, text: string): Promise<{ streamed: boolean; userMessageId: string }>;
  helperRecords(
    kind: "admin" | "bare",
    helper: string,
  ): Promise<{ records: SdkRecoveryRecord[]; calls: ModelCall[]; live: number; results: { requestId: string; status: string }[] }>;
  evict(): Promise<void>;
};
type ThinkStub = {
  setScript(steps: ModelStep[]): Promise<void>;
  setPolicy(p: TailChatPolicy): Promise<TailChatPolicy>;
  send(text: string): Promise<{ requestId: string; status: string; userMessageId: string }>;
  sendAndStream(text: string): Promise<{ streamed: boolean; userMessageId: string }>;
  recoveryRecords(): Promise<SdkRecoveryRecord[]>;
  modelCalls(): Promise<ModelCall[]>;
  sdkLive(): Promise<number>;
  evict(): Promise<void>;
};

const hub = async (name: string) => (await getAgentByName(env.TailChatHub as never, name)) as unknown as HubStub;
const think = async (name: string) => (await getAgentByName(env.TailThinkChat as never, name)) as unknown as ThinkStub;
type AiChatStub = Omit<ThinkStub, "sendAndStream"> & {
  sendAndStream(text: string): Promise<{ streamed: boolean; userMessageId: string }>;
  carriers(): Promise<{ requestId: string; runId: string }[]>;
};
const aiChat = async (name: string, cls: "TailAiChat" | "TailAdminAiChat" = "TailAiChat") =>
  (await getAgentByName(env[cls] as never, name)) as unknown as AiChatStub & { results(): Promise<{ requestId: string; status: string }[]> };
const settledRecords = (rs: SdkRecoveryRecord[]) => rs.every((r) => ["exhausted", "failed", "skipped"].includes(r.status));

/** Polls until `done` holds (as on a quiet machine; test/patience.ts allows more), delivering each step's messages. */
async function untilSettled(step: () => Promise<boolean>, ms = 20_000, of: { durableObjectId?: string } = {}): Promise<void> {
  const end = Date.now() + patient(ms);
  for (;;) {
    const done = await step();
    await deliver(of);
    if (done || Date.now() > end) return;
    await scheduler.wait(200);
  }
}

/**
 * One turn of a Think sub-agent under a plain parent, meeting `fault`. `facetIds`: each step's item carries the
 * facet's own Durable Object id, as the runtime sends it (else a stand-in id, which matches no parent).
 */
async function driveSub(kind: "admin" | "bare", fault: Fault, parent: string, helper: string, facetIds = false): Promise<Subject> {
  const { steps, policy } = SCRIPTS[fault];
  await (await hub(parent)).helperSetup(kind, helper, steps, policy);
  const facet = facetIds ? { durableObjectId: await (await hub(parent)).helperObjectId(kind, helper) } : {};
  const step = () => deliver(facet);
  await step();
  const turn: Subject["turns"][number] = { id: "", userMessageId: "" };
  let action: unknown = null;
  if (fault === "abort") {
    const r = await (await hub(parent)).helperSendAndStream(kind, helper, "what is the answer?");
    turn.userMessageId = r.userMessageId;
    await step();
    // Evicting the parent evicts its facets; reaching the helper again wakes it, and the SDK recovers its turn.
    await (await hub(parent)).evict().catch(() => {});
    await step();
  } else if (fault === "force-idle") {
    const r = await (await hub(parent)).helperSendAndStream(kind, helper, "write the long report");
    turn.userMessageId = r.userMessageId;
    await step();
    const target = { agentClass: "TailSubChat", agentName: `TailChatHub:${parent} › ${helper}` };
    // The console acts only on agents it knows: the turn's first events registered this one.
    await pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", [target.agentClass, target.agentName], (rs) => rs.length === 1);
    action = await consoleAdminClient(env as Env, OPERATOR).forceIdle(target, { reason: "tail matrix: force idle mid-turn" });
    await step();
  } else {
    const r = await (await hub(parent)).helperSend(kind, helper, "look this up");
    Object.assign(turn, { id: r.requestId, userMessageId: r.userMessageId, returned: r.status });
    await step();
  }
  let last = await (await hub(parent)).helperRecords(kind, helper);
  await step();
  if (fault === "abort" || fault === "stalls") {
    await untilSettled(
      async () => {
        const h = await hub(parent);
        await runDurableObjectAlarm(h as never).catch(() => {});
        last = await h.helperRecords(kind, helper);
        return last.live === 0 && settledRecords(last.records);
      },
      20_000,
      facet,
    );
  }
  if (fault === "force-idle") {
    // The turn ends as the SDK says once the action stopped it: what its `saveMessages` returned, if it returned
    // (force idle stops a sub-agent's turn by evicting it: the call never returns, and its fiber row is gone).
    await untilSettled(
      async () => {
        last = await (await hub(parent)).helperRecords(kind, helper);
        return last.live === 0;
      },
      20_000,
      facet,
    );
    turn.returned = last.results[0]?.status;
  }
  turn.id ||= last.calls[0]!.requestId!;
  // Keyed by its parent where its Worker publishes the ancestry (admin) or the console matched its facet id.
  const agentName = kind === "admin" || facetIds ? `TailChatHub:${parent} › ${helper}` : helper;
  return {
    agentClass: kind === "admin" ? "TailSubChat" : "TailBareSubChat",
    agentName,
    turns: [turn],
    recovered: fault === "abort" || fault === "stalls",
    records: last.records,
    calls: last.calls,
    ...(action ? { action } : {}),
  };
}

/**
 * One user turn of a plain top-level chat agent (`open` reaches it by name), meeting `fault`: scripted, sent (or
 * streamed and evicted), then woken until the SDK settles it. Returns the turn as sent and the agent to read back.
 */
async function sendTurn<A extends ThinkStub | AiChatStub>(open: (name: string) => Promise<A>, fault: Fault, name: string) {
  const { steps, policy } = SCRIPTS[fault];
  const a = await open(name);
  await a.setPolicy(policy);
  await a.setScript(steps);
  await deliver();
  let userMessageId = "";
  let sent: { requestId: string; status: string } | null = null;
  if (fault === "abort") {
    userMessageId = (await a.sendAndStream("what is the answer?")).userMessageId;
    await deliver();
    await a.evict().catch(() => {});
    await deliver();
  } else {
    const r = await a.send("status?");
    userMessageId = r.userMessageId;
    sent = { requestId: r.requestId, status: r.status };
    await deliver();
  }
  if (fault !== "none") {
    await untilSettled(async () => {
      const b = await open(name);
      await runDurableObjectAlarm(b as never).catch(() => {});
      return (await b.sdkLive()) === 0 && settledRecords(await b.recoveryRecords());
    });
  }
  const b = await open(name);
  const calls = await b.modelCalls();
  return { b, calls, userMessageId, sent, requestId: sent?.requestId || calls[0]!.requestId! };
}

/** One turn of a plain top-level Think agent, meeting `fault`: its run is named by the turn's request id. */
async function driveThink(fault: Fault, name: string): Promise<Subject> {
  const { b, calls, userMessageId, sent, requestId } = await sendTurn(think, fault, name);
  const turn: Subject["turns"][number] = { id: requestId, userMessageId, ...(sent ? { returned: sent.status } : {}) };
  return { agentClass: "TailThinkChat", agentName: name, turns: [turn], recovered: fault !== "none", records: await b.recoveryRecords(), calls };
}

/** One turn of a plain top-level AIChatAgent, meeting `fault`: its run is named by the carrier Task of its first attempt. */
async function driveAiChat(fault: Fault, name: string): Promise<Subject> {
  const { b, calls, userMessageId, sent, requestId } = await sendTurn((n) => aiChat(n), fault, name);
  const carrier = (await b.carriers()).find((c) => c.requestId === requestId);
  const turn: Subject["turns"][number] = {
    id: carrier?.runId ?? `(no carrier recorded for ${requestId})`,
    requestId,
    userMessageId,
    ...(sent ? { returned: sent.status } : {}),
  };
  return { agentClass: "TailAiChat", agentName: name, turns: [turn], recovered: fault !== "none", records: await b.recoveryRecords(), calls };
}

/**
 * How many times the SDK ran each user turn: the scripted model's calls (each run calls it once). A user turn's first
 * call carries its own request id; its recovery turns' calls follow it until the next user turn's.
 */
function runsOf(calls: ModelCall[], turns: Subject["turns"]): Record<string, number> {
  const out: Record<string, number> = {};
  let current: string | null = null;
  for (const c of calls) {
    const t = turns.find((t) => (t.requestId ?? t.id) === c.requestId);
    if (t) current = t.id;
    if (current) out[current] = (out[current] ?? 0) + 1;
  }
  return out;
}

/**
 * What the SDK records of the subject's user turns, as the console must show it: one run per user turn, whose
 * attempt is how many times the SDK ran it (each run calls the scripted model once), its status by the SDK's word
 * (what `saveMessages` returned, or the recovery record where the SDK gave up; none left means the recovery
 * completed); its incident from the recovery record. `undefined`: the SDK does not say.
 */
function sdkSide(s: Subject): View & { incidentIds: Record<string, string>; attemptEvents: number } {
  const view: View & { incidentIds: Record<string, string>; attemptEvents: number } = {
    runs: {},
    incidents: {},
    incidentIds: {},
    listed: s.turns.map((t) => t.id),
    attemptEvents: 0,
  };
  for (const t of s.turns) {
    const requestId = t.requestId ?? t.id;
    const record = s.records.find((r) => (r.recoveryRootRequestId ?? r.requestId) === requestId) ?? null;
    const byRecord = record ? recoveryRecordExpected(record) : null;
    const word = t.returned && !s.recovered ? t.returned : s.recovered && !record ? "completed" : undefined;
    // Force idle evicted the turn: the SDK keeps no record of it afterwards (no fiber row, no result, no recovery
    // record), so what the console shows is the action's own word, as for any work the SDK forgot (test/truth).
    const forgotten = s.action !== undefined && !word && !record;
    const status = forgotten ? "force_idled" : (byRecord?.turn ?? (word ? expectedFor(CHAT_TURN_EXPECTED, word, "a chat turn status") : undefined));
    const runs = runsOf(s.calls, s.turns)[t.id] ?? 1;
    view.runs[t.id] = { kind: "chat_turn", ...(status ? { status } : {}), ...(status === "completed" ? { error: null } : {}), attempt: runs };
    if (record) {
      view.incidents[t.id] = { status: byRecord!.incident, reason: record.reason ?? null, attempts: record.attempt };
      view.incidentIds[t.id] = record.incidentId;
    } else if (s.recovered) {
      view.incidents[t.id] = { status: "recovered" };
      view.incidentIds[t.id] = `${requestId}:${t.userMessageId}`;
    }
    // One recovery attempt per run the SDK interrupted (evicted or stalled): every run but one that completed.
    if (s.recovered) view.attemptEvents += runs - (status === "completed" ? 1 : 0);
  }
  view.overview = { running: 0, openIncidents: 0 };
  view.openIncidentRows = 0;
  return view;
}

/** Recovery attempts the overview counts (every attempt event type, from the rollups it reads). */
async function attemptEvents(): Promise<number> {
  const types = [...ATTEMPT_EVENT_TYPES];
  const row = await env.DB.prepare(`SELECT COALESCE(SUM(n), 0) AS n FROM event_rollups WHERE type IN (${types.map(() => "?").join(", ")})`)
    .bind(...types)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

const results: { name: string; cells: Cell[] }[] = [];

/** The run an incident's page links as its chat turn (its JSON's request id), or null. */
async function incidentTurn(s: Subject, incidentId: string): Promise<string | null> {
  const owner = `agentClass=${encodeURIComponent(s.agentClass)}&agentName=${encodeURIComponent(s.agentName)}`;
  const res = await call(`/incidents/${encodeURIComponent(incidentId)}?${owner}`, { as: "viewer", headers: { Accept: "application/json" } });
  if (!res.ok) return null;
  return ((await res.json()) as { incident: { requestId: string | null } }).incident.requestId;
}

/** Settles, reads both sides and compares them field by field. */
async function compare(name: string, s: Subject, before: OverviewFigures, attemptsBefore: number): Promise<Cell[]> {
  await settle(s, { reconcile: false });
  const sdk = sdkSide(s);
  const shown = await consoleView({ agentClass: s.agentClass, agentName: s.agentName, kind: "chat_turn" }, sdk, before, (id) => sdk.incidentIds[id]!);
  const attempts = (await attemptEvents()) - attemptsBefore;
  const cells: Cell[] = [
    ...compareViews(sdk, shown),
    { field: "overview.recoveryAttempts", sdk: sdk.attemptEvents, console: attempts, verdict: sdk.attemptEvents === attempts ? "agree" : "DISAGREE" },
  ];
  // Each recovery incident links to the user turn it recovers (its page's "chat turn"): the run the turn is shown as.
  for (const [runId, incidentId] of Object.entries(sdk.incidentIds)) {
    const linked = await incidentTurn(s, incidentId);
    cells.push({ field: "incident.turn", sdk: runId, console: linked, verdict: linked === runId ? "agree" : "DISAGREE" });
  }
  results.push({ name, cells });
  return cells;
}

/** The chat rows on the given tail path, with the matrix table printed after them. */
export function chatTailMatrix(on: TailPath): void {
  path = on;
  const label = on === "classic" ? "tail" : "stream";

  matrixHooks(() => tail.stop(), results);

  describe(`truth matrix, chat rows captured by the ${on} tail: the console shows what the SDK records of each chat turn`, () => {
    const rows: { name: string; drive: () => Promise<Subject> }[] = [
      ...(["none", "abort", "stalls"] as const).map((fault) => ({
        name: `${label}: think sub-agent chat turn × ${fault}`,
        drive: () => driveSub("admin", fault, `tail-hub-${uid()}`, `helper-${fault}-${uid()}`),
      })),
      {
        name: `${label}: think sub-agent chat turn × force-idle (admin mixin)`,
        drive: () => driveSub("admin", "force-idle", `tail-hub-${uid()}`, `helper-idle-${uid()}`),
      },
      ...(["none", "abort", "stalls"] as const).map((fault) => ({
        name: `${label}: think chat turn × ${fault}`,
        drive: () => driveThink(fault, `tail-think-${fault}-${uid()}`),
      })),
      ...(["none", "abort", "stalls"] as const).map((fault) => ({
        name: `${label}: AIChatAgent chat turn × ${fault}`,
        drive: () => driveAiChat(fault, `tail-aichat-${fault}-${uid()}`),
      })),
    ];
    for (const row of rows) {
      it(row.name, { timeout: patient(90_000) }, async () => {
        const before = await overviewFigures();
        const attemptsBefore = await attemptEvents();
        const s = await row.drive();
        const cells = await compare(row.name, s, before, attemptsBefore);
        const acted = s.action ? `\nforce idle answered: ${JSON.stringify(s.action).slice(0, 1500)}` : "";
        expect(
          cells.filter((c) => c.verdict === "DISAGREE"),
          scenarioTable(row.name, cells) + acted,
        ).toEqual([]);
        if (s.action) expect((s.action as { ok: boolean }).ok, acted).toBe(true);
      });
    }

    it(`${label}: two parents' same-named sub-agents with the admin mixin are two agents, each with its own turn`, { timeout: patient(90_000) }, async () => {
      const helper = `same-${uid()}`;
      const [p1, p2] = [`tail-hub-${uid()}`, `tail-hub-${uid()}`];
      for (const p of [p1, p2]) {
        const before = await overviewFigures();
        const attemptsBefore = await attemptEvents();
        const s = await driveSub("admin", "none", p, helper);
        const cells = await compare(`${label}: same-named sub-agent under ${p === p1 ? "parent 1" : "parent 2"}`, s, before, attemptsBefore);
        expect(
          cells.filter((c) => c.verdict === "DISAGREE"),
          scenarioTable(p, cells),
        ).toEqual([]);
      }
      const agents = await env.DB.prepare("SELECT agent_name FROM agents WHERE agent_class = 'TailSubChat' AND agent_name LIKE ? ORDER BY agent_name")
        .bind(`% › ${helper}`)
        .all<{ agent_name: string }>();
      expect(agents.results.map((r) => r.agent_name)).toEqual([`TailChatHub:${p1} › ${helper}`, `TailChatHub:${p2} › ${helper}`].sort());
    });

    it(`${label}: without the admin mixin, two parents' same-named sub-agents are keyed by their own name: one console agent holding both turns`, {
      timeout: patient(90_000),
    }, async () => {
      // What the console says when the Worker publishes no ancestry and it knows no parent with the facet's id
      // (docs/capture.md, "Unknown parent": these parents never report, and the items carry stand-in ids): the SDK's
      // messages name the sub-agent's class and own name only, so both parents' turns are under one agent, `helper`.
      const helper = `bare-${uid()}`;
      const before = await overviewFigures();
      const attemptsBefore = await attemptEvents();
      const a = await driveSub("bare", "none", `tail-hub-${uid()}`, helper);
      const b = await driveSub("bare", "none", `tail-hub-${uid()}`, helper);
      const both: Subject = { ...a, turns: [...a.turns, ...b.turns], calls: [...a.calls, ...b.calls], records: [...a.records, ...b.records] };
      await settle(both, { reconcile: false });
      const cells = await compare(`${label}: same-named bare sub-agents (one key)`, both, before, attemptsBefore);
      expect(
        cells.filter((c) => c.verdict === "DISAGREE"),
        scenarioTable("bare sub-agents", cells),
      ).toEqual([]);
      const agents = await env.DB.prepare("SELECT agent_name FROM agents WHERE agent_class = 'TailBareSubChat' AND agent_name LIKE ?")
        .bind(`%${helper}`)
        .all<{ agent_name: string }>();
      expect(agents.results.map((r) => r.agent_name)).toEqual([helper]);
    });

    it(`${label}: without the admin mixin, two known parents' same-named sub-agents are two agents, matched by their facet ids`, {
      timeout: patient(90_000),
    }, async () => {
      // The parents report work of their own (so the console knows them), and each step's item carries the facet's own
      // id, as the runtime sends it: the console matches the id to its parent (docs/capture.md, "Sub-agents").
      const helper = `matched-${uid()}`;
      const [p1, p2] = [`tail-hub-${uid()}`, `tail-hub-${uid()}`];
      for (const p of [p1, p2]) {
        await (await hub(p)).ownWork();
        await deliver({ durableObjectId: env.TailChatHub.idFromName(p).toString() });
      }
      await pollRows("SELECT 1 FROM agents WHERE agent_class = 'TailChatHub' AND agent_name IN (?, ?)", [p1, p2], (rs) => rs.length === 2);
      for (const p of [p1, p2]) {
        const before = await overviewFigures();
        const attemptsBefore = await attemptEvents();
        const s = await driveSub("bare", "none", p, helper, true);
        const cells = await compare(`${label}: same-named bare sub-agent under ${p === p1 ? "parent 1" : "parent 2"}`, s, before, attemptsBefore);
        expect(
          cells.filter((c) => c.verdict === "DISAGREE"),
          scenarioTable(p, cells),
        ).toEqual([]);
      }
      const agents = await env.DB.prepare("SELECT agent_name FROM agents WHERE agent_class = 'TailBareSubChat' AND agent_name LIKE ? ORDER BY agent_name")
        .bind(`%${helper}`)
        .all<{ agent_name: string }>();
      expect(agents.results.map((r) => r.agent_name)).toEqual([`TailChatHub:${p1} › ${helper}`, `TailChatHub:${p2} › ${helper}`].sort());
    });

    it(`${label} + admin mixin: reconciling a top-level AIChatAgent mid-turn keeps its turn one run, named by its carrier`, {
      timeout: patient(90_000),
    }, async () => {
      // The admin side knows a live turn by its request id (the carrier's metadata), the tail by its carrier: asking
      // the agent mid-turn must neither close the carrier-named run nor add a second run under the request id.
      const name = `tail-aichat-admin-${uid()}`;
      const target = { agentClass: "TailAdminAiChat", agentName: name };
      const before = await overviewFigures();
      const attemptsBefore = await attemptEvents();
      const a = await aiChat(name, "TailAdminAiChat");
      await a.setScript([{ kind: "text", chunks: Array.from({ length: 20 }, (_, i) => `word${i} `), delayMs: 100 }]);
      const { userMessageId } = await a.sendAndStream("write the report");
      await deliver();
      await pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", [target.agentClass, target.agentName], (rs) => rs.length === 1);
      const [carrier] = await a.carriers();
      await settle(target, { reconcile: false });
      await reconcileAgent(env as Env, target, { now: Date.now() + 1, minAgeMs: 0 });
      await settle(target, { reconcile: false });
      const midTurn = await env.DB.prepare("SELECT fiber_id AS id, outcome FROM runs WHERE agent_class = ? AND agent_name = ?")
        .bind(target.agentClass, target.agentName)
        .all<{ id: string; outcome: string | null }>();
      expect(midTurn.results, "mid-turn: one run, the carrier's, still open").toEqual([{ id: carrier!.runId, outcome: null }]);
      await untilSettled(async () => (await (await aiChat(name, "TailAdminAiChat")).results()).length > 0);
      const b = await aiChat(name, "TailAdminAiChat");
      const [result] = await b.results();
      await deliver();
      await settle(target);
      const s: Subject = {
        agentClass: target.agentClass,
        agentName: name,
        turns: [{ id: carrier!.runId, requestId: carrier!.requestId, userMessageId, returned: result!.status }],
        recovered: false,
        records: await b.recoveryRecords(),
        calls: await b.modelCalls(),
      };
      const cells = await compare(`${label} + admin mixin: AIChatAgent reconciled mid-turn`, s, before, attemptsBefore);
      expect(
        cells.filter((c) => c.verdict === "DISAGREE"),
        scenarioTable("AIChatAgent reconciled mid-turn", cells),
      ).toEqual([]);
    });
  });
}
