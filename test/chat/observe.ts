import type { ModelCall } from "../fixtures/chat-model";
import { CHAT_TURN_EXPECTED, expectedFor, recoveryRecordExpected } from "../truth/expected-states";
import { consoleView, type OverviewFigures, overviewFigures, type View } from "../truth/observe";
import { type ChatSubject, chatStub, type UserTurn } from "./drive";

/**
 * The two sides of a chat row, in the shape of the main matrix (test/truth/observe.ts): what the SDK records through
 * its public APIs (Think's `listSubmissions`, what `saveMessages` returned, the chat-recovery records under
 * `cf:chat-recovery:incident:`, the messages), turned into what the console must show by the test's own tables
 * (test/truth/expected-states.ts, never the product's mapping in src/telemetry/sdk-states.ts), and what the console
 * shows through its own JSON. `undefined`: that side does not know, and the field is shown but not compared.
 */

export type ChatView = View & {
  /** The incident id of each run's recovery (the SDK's `<root>:<latest user message id>`), when it has one. */
  incidentIds: Record<string, string>;
};

export { type OverviewFigures, overviewFigures };

/**
 * How many times the SDK ran each user turn: its calls of the scripted model (the fixture's log: each run of a
 * turn, the turn itself or a recovery turn, calls the model once). A user turn's first call carries its own request
 * id; its recovery turns' calls follow it until the next user turn's.
 */
function runsPerTurn(calls: ModelCall[], turns: UserTurn[]): Record<string, number> {
  const out: Record<string, number> = {};
  let current: string | null = null;
  for (const c of calls) {
    const own = turns.find((t) => t.id === c.requestId);
    if (own) current = own.id;
    if (current) out[current] = (out[current] ?? 0) + 1;
  }
  return out;
}

/** What the SDK records for the subject's user turns. */
export async function chatSdkView(s: ChatSubject): Promise<ChatView> {
  const stub = await chatStub(s.parent ? "ThinkChatFixture" : s.agentClass, s.parent ?? s.agentName);
  const view: ChatView = { runs: {}, incidents: {}, incidentIds: {}, listed: s.turns.map((t) => t.id) };
  // A sub-agent's records come through its parent: it is a facet, reached only through it.
  const sub = s.parent ? await stub.helperRecords(s.agentName) : null;
  const records = sub ? sub.records : await stub.recoveryRecords();
  const runs = runsPerTurn(sub ? sub.calls : await stub.modelCalls(), s.turns);
  const think = s.agentClass === "ThinkChatFixture";
  const submissions = think ? await stub.submissions() : [];
  const terminal = think || sub ? null : await stub.terminal();
  for (const [i, t] of s.turns.entries()) {
    const record = records.find((r) => (r.recoveryRootRequestId ?? r.requestId) === t.id) ?? null;
    let word: string | undefined;
    let error: string | undefined;
    if (think) {
      // Think's own record of the turn: its submission (a recovery turn moves its requestId along, never its id).
      const sub = submissions.find((x) => x.submissionId === t.id);
      word = sub?.status;
      error = sub?.error;
    } else {
      // AIChatAgent (and a sub-agent's programmatic turn) keeps no record of a turn: what `saveMessages` returned, where the call returned; after an
      // eviction, the recovery record (the SDK deletes it only once the recovery completed, so none left means that).
      const ret = s.returned[t.id];
      word = ret?.status ?? (record ? "running" : s.recovered && i === 0 ? "completed" : undefined);
      error = ret?.error;
    }
    // The recovery record decides how the turn ended where the SDK gave up on it or declined it; else the turn's own word.
    const byRecord = record ? recoveryRecordExpected(record) : null;
    const status = word === undefined ? undefined : (byRecord?.turn ?? expectedFor(CHAT_TURN_EXPECTED, word, "a chat turn status"));
    const ended = status === "failed" || status === "exhausted";
    // The user saw the terminal message of an exhausted turn: AIChatAgent keeps it as its last terminal record.
    if (!think && status === "exhausted") error ??= terminal?.body;
    view.runs[t.id] = {
      kind: "chat_turn",
      ...(status !== undefined ? { status } : {}),
      // The error the SDK records for a turn that failed or was given up; none for any other end.
      ...(ended ? (error !== undefined ? { error } : {}) : status !== undefined ? { error: null } : {}),
      attempt: runs[t.id] ?? 1,
    };
    if (record) {
      view.incidents[t.id] = {
        status: byRecord!.incident,
        reason: record.reason ?? null,
        attempts: record.attempt,
      };
      view.incidentIds[t.id] = record.incidentId;
    } else if (s.recovered && i === 0) {
      // No record left of a recovery the fault started: the SDK deletes one only when the recovery completed.
      view.incidents[t.id] = { status: "recovered" };
      view.incidentIds[t.id] = `${t.id}:${t.userMessageId}`;
    }
  }
  // A sub-agent's live state the console cannot ask for (its binding reaches a top-level object, not the facet): not compared.
  if (!sub) view.agentStatus = (await stub.sdkLive()) > 0 ? "running" : "idle";
  else if (sub.live > 0) view.agentStatus = "running";
  const open = Object.values(view.incidents).filter((i) => i?.status === "open").length;
  view.overview = { running: Object.values(view.runs).filter((r) => r.status === "running").length, openIncidents: open };
  view.openIncidentRows = open;
  return view;
}

/** What the console shows for the same turns: the main matrix's reading, with each turn's incident id as the SDK recorded it. */
export function chatConsoleView(s: ChatSubject, sdk: ChatView, before: OverviewFigures): Promise<View> {
  // The console keys a sub-agent by its ancestry as the SDK publishes it (`parentPath`, root first, each ancestor
  // `Class:name`, then the sub-agent's own name; docs/capture.md): two parents' same-named helpers are two agents.
  const agentName = s.parent ? `ThinkChatFixture:${s.parent} › ${s.agentName}` : s.agentName;
  return consoleView({ agentClass: s.agentClass, agentName, kind: "chat_turn" }, sdk, before, (runId) => sdk.incidentIds[runId]!);
}
