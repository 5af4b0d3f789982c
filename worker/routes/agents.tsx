import { agentKeyName, maskSecrets, parseAgentKeyName, parseWorkerClassKey } from "@agent-oncall/telemetry";
import { Hono } from "hono";
import { adminErrorWords } from "../../console/admin-words";
import type { ActionAvailability } from "../../console/components/actions";
import { RecoveryPauseState } from "../../console/components/recovery-pause";
import { AgentLive, AgentPage, type LiveState, type ParentAgent, RunHistory } from "../../console/pages/agent";
import { AgentsPage, agentColumnSetFor } from "../../console/pages/agents";
import { RunPage } from "../../console/pages/run";
import { agentListFilters, type ConsoleStore, eventGapOf } from "../../src/store/console-store";
import { parseFilters } from "../../src/store/read-models/filters";
import { allowedAgentClasses, consoleAdminClient } from "../admin-client";
import { PAGE_RECONCILE_AFTER_MS, recordFindings } from "../jobs";
import { agentActionsFrom } from "./availability";
import { listQuery } from "./columns";
import { type ConsoleContext, type ConsoleEnv, pageContext, storeOf, wantsJson } from "./context";
import { page, problem } from "./render";

/** An agent's page, its live fragment, and the snapshot viewer of one run. */
export const agents = new Hono<ConsoleEnv>();

function target(c: ConsoleContext) {
  return { agentClass: c.req.param("agentClass") ?? "", agentName: c.req.param("agentName") ?? "" };
}

/**
 * The agent's live state, or a typed error to show in its place: a sick agent (being evicted, failing,
 * slow) never turns into a 5xx; the client retries a call that failed in transit once.
 */
async function live(c: ConsoleContext): Promise<LiveState> {
  const admin = consoleAdminClient(c.env, { email: c.var.user.email, role: c.var.user.role });
  const r = await admin.live(target(c));
  return r.ok ? r.value : { error: adminErrorWords(r.error), code: r.error.code, kind: r.error.facts?.kind };
}

/** Which actions the page offers, from what the agent answered. */
function availability(agentClass: string, state: LiveState): ActionAvailability {
  return agentActionsFrom(agentClass, "error" in state ? { code: state.code, kind: state.kind, words: state.error } : { status: state.status });
}

/** A sub-agent's direct parent (its key name holds its ancestry), and whether that parent has a page here. */
async function parentOf(store: ConsoleStore, agentName: string): Promise<ParentAgent | null> {
  const sub = parseAgentKeyName(agentName);
  if (!sub) return null;
  const direct = sub.parentPath.at(-1)!;
  const key = { agentClass: direct.className, agentName: agentKeyName(direct.name, sub.parentPath.slice(0, -1)) };
  return { ...key, reported: Boolean(await store.agents.find(key)) };
}

/**
 * The agent registry; with gaps=true exactly the agents with events that never arrived, with blocked=true exactly
 * the agents whose events cannot reach the console (the overview's cards for each link here). JSON for Accept:
 * application/json.
 */
agents.get("/agents", async (c) => {
  const { q, cols } = listQuery(c, agentColumnSetFor(c.req.query()));
  const f = parseFilters(agentListFilters, q);
  const only = f.blocked ? "blocked" : f.gaps ? "gaps" : null;
  const list = await storeOf(c).agents.page(f, { cursor: q.cursor, limit: q.limit });
  if (wantsJson(c)) return c.json(list);
  return page(c, <AgentsPage ctx={pageContext(c)} query={q} page={list} only={only} cols={cols} />);
});

agents.get("/agents/:agentClass/:agentName", async (c) => {
  const t = target(c);
  const store = storeOf(c);
  const agent = await store.agents.find(t);
  if (!agent) return problem(c, 404, `No agent ${t.agentClass} "${t.agentName}" has reported to this console.`);
  // Keyed apart by its Worker (src/telemetry/workers.ts): not the agent the binding of its class addresses.
  const other = parseWorkerClassKey(t.agentClass);
  const [state, history, reconciled, pause, parent, notKnown, unknownParents, tail] = await Promise.all([
    live(c),
    store.runs.list({ agentClass: t.agentClass, agentName: t.agentName }, { limit: 20 }),
    store.agents.lastReconciliation(t),
    store.agents.recoveryPause(t, Date.now()),
    parentOf(store, t.agentName),
    store.agents.notKnown(t),
    // Facets keyed by this name because the tail matched no parent to them (worker/ingest/facet-parents.ts).
    // An agent keyed by its Worker: the objects behind it instead (what the parent search tried, where it ran).
    other ? store.agents.otherWorkerObjects(other.agentClass, t.agentName, other) : parseAgentKeyName(t.agentName) ? [] : store.agents.unknownParents(t),
    store.agents.tailRecord(t),
  ]);
  // What the agent just said corrects the projections (work whose end was never reported), after the answer.
  if (!("error" in state))
    c.executionCtx.waitUntil(
      recordFindings(c.env, t, state, { minAgeMs: PAGE_RECONCILE_AFTER_MS }).catch((e) =>
        console.error(`[reconcile] ${t.agentClass}/${t.agentName}: ${e instanceof Error ? e.message : String(e)}`),
      ),
    );
  return page(
    c,
    <AgentPage
      ctx={pageContext(c)}
      {...t}
      live={state}
      availability={availability(t.agentClass, state)}
      history={history.items}
      reconciled={reconciled}
      gap={eventGapOf(agent)}
      capture={{ tail, outbox: eventGapOf(agent).highest !== null }}
      pause={pause}
      parent={parent}
      notKnown={notKnown}
      unknownParents={other ? [] : unknownParents}
      otherWorker={other ? { ...other, bound: allowedAgentClasses(c.env).includes(other.agentClass), objects: unknownParents } : null}
    />,
  );
});

agents.get("/agents/:agentClass/:agentName/live", async (c) => {
  const t = target(c);
  return c.html(<AgentLive ctx={pageContext(c)} agent={t} live={await live(c)} />);
});

agents.get("/agents/:agentClass/:agentName/pause", async (c) => {
  const t = target(c);
  const pause = await storeOf(c).agents.recoveryPause(t, Date.now());
  return c.html(<RecoveryPauseState pause={pause} now={pageContext(c).now} />);
});

agents.get("/agents/:agentClass/:agentName/history", async (c) => {
  const t = target(c);
  const history = await storeOf(c).runs.list({ agentClass: t.agentClass, agentName: t.agentName }, { limit: 20 });
  return c.html(<RunHistory ctx={pageContext(c)} {...t} history={history.items} />);
});

agents.get("/agents/:agentClass/:agentName/runs/:runId", async (c) => {
  const t = target(c);
  const runId = c.req.param("runId");
  const admin = consoleAdminClient(c.env, { email: c.var.user.email, role: c.var.user.role });
  // The client masks the live snapshot (no unmasked variant exists: secrets in it are shown to no one).
  const run = await admin.getRun(t, runId);
  if (run.ok) return page(c, <RunPage ctx={pageContext(c)} {...t} live={run.value} lastKnown={null} />);
  if (run.error.code === "invalid_input") return problem(c, 400, adminErrorWords(run.error));
  // The row is gone (the fiber finished or was recovered), or the agent cannot answer now (evicted, failing,
  // no admin mixin): show its last-known snapshot from the projection, saying why the live one is missing.
  const liveError = run.error.code === "not_found" ? null : adminErrorWords(run.error);
  const fiber = await storeOf(c).runs.stored(runId, t);
  if (!fiber)
    return problem(
      c,
      404,
      liveError ? `No last-known snapshot of run "${runId}", and its live state is unavailable: ${liveError}` : `No run or fiber with id "${runId}".`,
    );
  // Masked at the agent already; masked again for previews stored by agents on older package versions.
  const lastKnown = { ...fiber, snapshotPreview: fiber.snapshotPreview === null ? null : maskSecrets(fiber.snapshotPreview) };
  return page(c, <RunPage ctx={pageContext(c)} {...t} live={null} lastKnown={lastKnown} liveError={liveError} />);
});
