import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { consoleAdminClient } from "../../worker/admin-client";
import type { FixturePolicy, SdkRecoveryRecord, TranscriptEntry } from "../fixtures/chat-agents";
import type { ModelCall, ModelMeter, ModelStep } from "../fixtures/chat-model";
import { pollRows } from "../helpers";
import { patient } from "../patience";
import type { ChatFault, ChatPrimitive, ChatRow } from "./matrix";

/**
 * Drivers of the chat rows: how each chat agent meets each fault, on a fresh fixture agent. A driver returns the
 * subject (which agent, which user turns, what the SDK's calls returned, what an action answered, what it measured);
 * it asserts nothing itself.
 */

export type ChatClass = "ThinkChatFixture" | "AiChatFixture" | "ThinkSubChatFixture";

/** One user turn: the request id the SDK gave it first (Think: its submission id) and the user message it answers. */
export type UserTurn = { id: string; userMessageId: string };

export type ChatSubject = {
  primitive: ChatPrimitive;
  agentClass: ChatClass;
  agentName: string;
  /** A sub-agent's parent (a ThinkChatFixture): the sub-agent is reached only through it. */
  parent?: string;
  turns: UserTurn[];
  /** The fault drove the first turn into chat recovery: the SDK opened an incident for it. */
  recovered: boolean;
  /** What `saveMessages` returned (AIChatAgent keeps no submissions), per turn id, for the turns whose call returned. */
  returned: Record<string, { status: string; error?: string }>;
  action: { name: string; result: unknown } | null;
  /** What the row measured on the way (force idle: how the stream and the next turn behaved). */
  measured: { streamStoppedWithinMs?: number | null; chunksAfterAction?: number; nextTurnWaitedMs?: number; actionMs?: number };
};

/** The fixtures' methods the drivers call, as plain promises (RPC stub types are too deep to infer here). */
export type ChatStub = {
  setScript(steps: ModelStep[]): Promise<void>;
  setPolicy(p: FixturePolicy): Promise<FixturePolicy>;
  evict(): Promise<void>;
  settleTelemetry(): Promise<void>;
  modelCalls(): Promise<ModelCall[]>;
  meter(): Promise<ModelMeter>;
  recoveryRecords(): Promise<SdkRecoveryRecord[]>;
  transcript(): Promise<TranscriptEntry[]>;
  sdkLive(): Promise<number>;
  /** The incident ids the agent's own onChatRecovery was asked about, in this isolate. */
  recoveryHookCalls(): Promise<string[]>;
  // Think
  submit(text: string): Promise<{ submissionId: string; userMessageId: string }>;
  submitAndStream(text: string): Promise<{ submissionId: string; userMessageId: string; streamed: boolean }>;
  waitSubmission(id: string, timeoutMs?: number): Promise<{ status: string } | null>;
  submissions(): Promise<{ submissionId: string; requestId?: string; status: string; error?: string; createdAt: number; startedAt?: number }[]>;
  submission(id: string): Promise<{ submissionId: string; status: string; error?: string; createdAt: number; startedAt?: number } | null>;
  // AIChatAgent
  send(text: string): Promise<{ requestId: string; status: string; error?: string; userMessageId: string }>;
  sendAndStream(text: string): Promise<{ streamed: boolean; userMessageId: string }>;
  results(): Promise<{ requestId: string; status: string; error?: string }[]>;
  terminal(): Promise<{ requestId: string; body: string } | null>;
  // A Think parent of a sub-agent
  askHelper(helper: string, text: string, steps: ModelStep[]): Promise<{ requestId: string; status: string; error?: string; userMessageId: string }>;
  helperRecords(helper: string): Promise<{ records: SdkRecoveryRecord[]; calls: ModelCall[]; live: number }>;
};

export async function chatStub(agentClass: ChatClass, agentName: string): Promise<ChatStub> {
  return (await getAgentByName(env[agentClass] as never, agentName)) as unknown as ChatStub;
}

const OPERATOR = { email: "truth@example.com", role: "operator" } as const;
const uid = () => crypto.randomUUID().slice(0, 8);

const text = (chunks: string[], delayMs?: number): ModelStep => ({ kind: "text", chunks, ...(delayMs ? { delayMs } : {}) });
const stall = (...chunks: string[]): ModelStep => ({ kind: "stall", chunks });
/** A long answer streamed slowly: 100 chunks, 200 ms apart (20 s unless stopped). */
const SLOW = text(
  Array.from({ length: 100 }, (_, i) => `word${i} `),
  200,
);

/** Polls `done` every 30 ms until it holds or `ms` pass (as on a quiet machine; test/patience.ts allows more). */
export async function until(done: () => Promise<boolean>, ms = 20_000): Promise<boolean> {
  const end = Date.now() + patient(ms);
  for (;;) {
    if (await done()) return true;
    if (Date.now() > end) return false;
    await scheduler.wait(30);
  }
}

/** Evicts the agent and wakes it through its alarm, where the SDK replays the interrupted turn and recovers it. */
async function evictAndWake(s: ChatSubject): Promise<ChatStub> {
  await (await chatStub(s.agentClass, s.agentName)).evict().catch(() => {});
  const woken = await chatStub(s.agentClass, s.agentName);
  await runDurableObjectAlarm(woken as never);
  return woken;
}

const exhaustedOrGone = (records: SdkRecoveryRecord[]) => records.length === 0 || records.every((r) => ["exhausted", "failed", "skipped"].includes(r.status));

/** Runs one chat row. */
export async function driveChat(row: ChatRow): Promise<ChatSubject> {
  if (row.primitive === "think-sub") return driveSubAgent(row.fault);
  const agentClass: ChatClass = row.primitive === "think" ? "ThinkChatFixture" : "AiChatFixture";
  const s: ChatSubject = {
    primitive: row.primitive,
    agentClass,
    agentName: `truth-${row.primitive}-${row.fault}-${uid()}`,
    turns: [],
    recovered: false,
    returned: {},
    action: null,
    measured: {},
  };
  const stub = await chatStub(agentClass, s.agentName);
  await SCRIPTS[row.fault](stub);
  await FAULTS[row.fault](s, stub);
  await (await chatStub(agentClass, s.agentName)).settleTelemetry();
  return s;
}

const SCRIPTS: Record<ChatFault, (stub: ChatStub) => Promise<void>> = {
  none: (stub) => stub.setScript([text(["All ", "green."])]),
  failure: (stub) => stub.setScript([{ kind: "fail", message: "the model rejected the prompt", statusCode: 400 }]),
  abort: (stub) => stub.setScript([stall("The answer is"), text([" forty-two."])]),
  evictions: async (stub) => {
    await stub.setPolicy({ maxInterruptedAttempts: 3 });
    await stub.setScript([stall("Migrating"), stall(" the"), stall(" tenant"), stall(" now"), text(["never reached"])]);
  },
  stalls: async (stub) => {
    await stub.setPolicy({ stallTimeoutMs: 200, maxAttempts: 2 });
    await stub.setScript([stall("Restarting"), stall(), stall(), stall()]);
  },
  "force-idle": (stub) => stub.setScript([SLOW, text(["Next answer."])]),
};

/** Starts a user turn that streams (its first chunk out), returning it; the turn runs on in the agent. */
async function startStreaming(s: ChatSubject, stub: ChatStub, prompt: string): Promise<UserTurn> {
  if (s.agentClass === "ThinkChatFixture") {
    const r = await stub.submitAndStream(prompt);
    return { id: r.submissionId, userMessageId: r.userMessageId };
  }
  const r = await stub.sendAndStream(prompt);
  const calls = await stub.modelCalls();
  return { id: calls[calls.length - 1]!.requestId!, userMessageId: r.userMessageId };
}

/** Runs a user turn to its end (Think: a submission and Think's own wait; AIChatAgent: `saveMessages`). */
async function runTurn(s: ChatSubject, stub: ChatStub, prompt: string): Promise<UserTurn> {
  if (s.agentClass === "ThinkChatFixture") {
    const r = await stub.submit(prompt);
    await stub.waitSubmission(r.submissionId);
    return { id: r.submissionId, userMessageId: r.userMessageId };
  }
  const r = await stub.send(prompt);
  s.returned[r.requestId] = { status: r.status, ...(r.error ? { error: r.error } : {}) };
  return { id: r.requestId, userMessageId: r.userMessageId };
}

/** Waits until the SDK has nothing live left and its recovery records are settled (or gone). */
async function quietAgent(s: ChatSubject): Promise<void> {
  await until(async () => {
    const stub = await chatStub(s.agentClass, s.agentName);
    return (await stub.sdkLive()) === 0 && exhaustedOrGone(await stub.recoveryRecords());
  });
}

const FAULTS: Record<ChatFault, (s: ChatSubject, stub: ChatStub) => Promise<void>> = {
  none: async (s, stub) => {
    s.turns.push(await runTurn(s, stub, "status?"));
  },
  failure: async (s, stub) => {
    s.turns.push(await runTurn(s, stub, "summarise the incident"));
    await quietAgent(s);
  },
  abort: async (s, stub) => {
    s.turns.push(await startStreaming(s, stub, "what is the answer?"));
    s.recovered = true;
    await evictAndWake(s);
    await quietAgent(s);
  },
  evictions: async (s, stub) => {
    s.turns.push(await startStreaming(s, stub, "migrate the tenant"));
    s.recovered = true;
    for (let i = 0; i < 5; i++) {
      const before = (await stub.modelCalls()).length;
      stub = await evictAndWake(s);
      // Each wake either starts a recovery turn (the model is called again, and stalls) or gives up.
      await until(async () => (await stub.modelCalls()).length > before || (await stub.recoveryRecords()).some((r) => r.status === "exhausted"), 10_000);
      if ((await stub.recoveryRecords()).some((r) => r.status === "exhausted")) break;
      await scheduler.wait(50); // let the recovery turn's first chunk reach storage before the next eviction
    }
    await quietAgent(s);
  },
  stalls: async (s, stub) => {
    s.turns.push(await runTurn(s, stub, "restart the queue consumer"));
    s.recovered = true;
    await quietAgent(s);
  },
  "force-idle": async (s, stub) => {
    s.turns.push(await startStreaming(s, stub, "write the long report"));
    await until(async () => (await stub.meter()).chunks >= 3, 10_000);
    // The console acts only on agents it knows: wait until this one's first events registered it.
    await pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", [s.agentClass, s.agentName], (r) => r.length === 1);
    const t0 = Date.now();
    const result = await consoleAdminClient(env, OPERATOR).forceIdle(
      { agentClass: s.agentClass, agentName: s.agentName },
      { reason: "truth matrix: force idle mid-turn" },
    );
    s.measured.actionMs = Date.now() - t0;
    s.action = { name: "force idle", result };
    // The stream stopped when the model is no longer pulled: no chunk after it stopped, over the next 2 s.
    const at = await stub.meter();
    await scheduler.wait(2000);
    const later = await stub.meter();
    s.measured.chunksAfterAction = later.chunks - at.chunks;
    s.measured.streamStoppedWithinMs = later.chunks === at.chunks && at.lastChunkAt !== null ? Math.max(0, at.lastChunkAt - t0) : null;
    // A new turn right after: it must not wait for the stopped one.
    if (s.agentClass === "ThinkChatFixture") {
      const next = await stub.submit("and now a short one");
      await stub.waitSubmission(next.submissionId);
      const sub = await stub.submission(next.submissionId);
      s.measured.nextTurnWaitedMs = sub?.startedAt !== undefined ? sub.startedAt - sub.createdAt : -1;
      s.turns.push({ id: next.submissionId, userMessageId: next.userMessageId });
    } else {
      const t1 = Date.now();
      s.turns.push(await runTurn(s, stub, "and now a short one"));
      s.measured.nextTurnWaitedMs = Date.now() - t1;
    }
    await quietAgent(s);
    if (s.agentClass === "AiChatFixture") {
      for (const r of await (await chatStub(s.agentClass, s.agentName)).results())
        s.returned[r.requestId] ??= { status: r.status, ...(r.error ? { error: r.error } : {}) };
    }
  },
};

/** A Think agent's sub-agent chat turn: the parent runs it through `subAgent()`, as its tool or workflow would. */
async function driveSubAgent(fault: ChatFault): Promise<ChatSubject> {
  const parent = `truth-parent-${fault}-${uid()}`;
  const helper = `truth-helper-${fault}-${uid()}`;
  const s: ChatSubject = {
    primitive: "think-sub",
    agentClass: "ThinkSubChatFixture",
    agentName: helper,
    parent,
    turns: [],
    recovered: false,
    returned: {},
    action: null,
    measured: {},
  };
  const steps: ModelStep[] = fault === "failure" ? [{ kind: "fail", message: "the model rejected the prompt", statusCode: 400 }] : [text(["Found ", "it."])];
  const r = await (await chatStub("ThinkChatFixture", parent)).askHelper(helper, "look this up", steps);
  s.returned[r.requestId] = { status: r.status, ...(r.error ? { error: r.error } : {}) };
  s.turns.push({ id: r.requestId, userMessageId: r.userMessageId });
  return s;
}
