import { fiberIncidentId } from "@agent-oncall/telemetry";
import { call } from "../worker/routes/harness";
import { type Subject, truthStub } from "./drive";
import { type AgentWord, agentExpected, expectedFor, MANAGED_FIBER_EXPECTED, TASK_EXPECTED } from "./expected-states";

/**
 * The two sides of the matrix, in the same shape: what the SDK records (its public APIs' raw words, turned into
 * what the console must show by the test's own table, expected-states.ts, never by the product's mapping in
 * src/telemetry/sdk-states.ts) and what the console shows (through its own JSON, the same reads its pages make).
 * `undefined` means "this side does not know": the SDK keeps no step name for a finished Tasks run, for instance.
 * Such a field is shown but not compared.
 */

/** One run, field by field, as a user would read it on the run's page. */
export type RunView = {
  kind?: string;
  /** A word, or (SDK side only) several acceptable words. */
  status?: string | { oneOf: string[] };
  phase?: string | null;
  step?: string | null;
  statusMessage?: string | null;
  error?: string | null;
  attempt?: number | null;
  /** The run's last stash as the console shows it (a preview), null when none reached it. */
  snapshot?: string | null;
};
export type IncidentView = { status?: string; reason?: string | null; attempts?: number };
export type View = {
  runs: Record<string, RunView>;
  /** The incident each run's fault opened (by run id), if the fault opens one. */
  incidents: Record<string, IncidentView | null>;
  agentStatus?: string;
  /** The run ids the agent's run list holds. */
  listed: string[];
  /** What this agent adds to the overview's figures: running runs of its kind, open incidents. */
  overview?: { running: number; openIncidents: number };
  /** Rows of the open-incidents list (the overview card's link) for this agent. */
  openIncidentRows?: number;
  /**
   * Event numbering, a fact only the outbox helper reports: the agent's highest event number as the agents list
   * shows it (null: unnumbered, so what is missing is unknown), and whether it is on the "events missing" list.
   */
  numbering?: { highest: number | null; onGapsList: boolean };
};

/** The overview's fleet-wide figures this matrix checks, read as the overview's JSON. */
export type OverviewFigures = { running: Record<string, number>; openIncidents: number };

export async function overviewFigures(): Promise<OverviewFigures> {
  const res = await call("/", { as: VIEWER, headers: { Accept: "application/json" } });
  const { counts } = (await res.json()) as { counts: { runningByKind: Record<string, { n: number }>; openIncidents: { n: number } } };
  return { running: Object.fromEntries(Object.entries(counts.runningByKind).map(([k, v]) => [k, v.n])), openIncidents: counts.openIncidents.n };
}

const VIEWER = "viewer" as const;

/** The SDK's public records, as the fixtures hand them over (agents 0.32 TaskRunSnapshot / FiberInspection). */
type SdkTask = { runId: string; state: string; statusMessage?: string; attempt?: number; error?: { name: string; message: string } };
type SdkFiber = { fiberId: string; status: string; error?: string };

/** What the SDK itself records for the subject's runs, via the fixtures' public-API readers. */
export async function sdkView(s: Subject): Promise<View> {
  const view: View = { runs: {}, incidents: {}, listed: [] };
  const agent: AgentWord[] = [];
  if (s.kind === "task") {
    const tasks = (await (await truthStub(s.agentClass, s.agentName)).sdkTasks()) as SdkTask[];
    for (const t of tasks) {
      const want = expectedFor(TASK_EXPECTED, t.state, "a Tasks run state");
      view.runs[t.runId] = {
        kind: "task",
        status: want.status,
        phase: want.phase,
        ...(t.statusMessage !== undefined ? { statusMessage: t.statusMessage } : {}),
        ...(t.attempt !== undefined ? { attempt: t.attempt } : {}),
        error: t.state === "failed" ? (t.error?.message ?? null) : null,
      };
      agent.push(want.agent);
    }
    view.listed = tasks.map((t) => t.runId);
  } else if (s.kind === "managed_fiber") {
    const fibers = await ((await truthStub(s.agentClass, s.agentName)) as unknown as { sdkFibers(): Promise<SdkFiber[]> }).sdkFibers();
    for (const f of fibers) {
      const want = expectedFor(MANAGED_FIBER_EXPECTED, f.status, "a managed fiber status");
      view.runs[f.fiberId] = { kind: "managed_fiber", status: want.status, error: f.error ?? null };
      agent.push(want.agent);
      // An eviction opened a fiber incident; its status follows the fiber's own status once recovery ran.
      if (s.evicted) view.incidents[f.fiberId] = { status: want.incident };
    }
    view.listed = fibers.map((f) => f.fiberId);
  } else {
    const stub = (await truthStub(s.agentClass, s.agentName)) as unknown as {
      runFiberTruth(id: string): Promise<{ row: boolean; outcome: string | null; error: string | null }>;
    };
    for (const id of s.runIds) {
      const t = await stub.runFiberTruth(id);
      // A plain runFiber's only SDK record is its cf_agents_runs row while it runs or awaits recovery; how it
      // ended is what the agent's own callback and recovery hook recorded.
      // Once its row is gone the SDK has no record of it: the agent's own record, or "ended, not reported".
      const status = t.row ? (s.evicted ? "interrupted" : "running") : t.outcome ? { oneOf: [t.outcome, "ended_unreported"] } : undefined;
      view.runs[id] = { kind: "fiber", ...(status !== undefined ? { status } : {}), ...(t.outcome ? { error: t.error } : {}) };
      if (t.row && !s.evicted) agent.push("running");
      if (s.evicted) view.incidents[id] = t.outcome === "recovered" ? { status: "recovered" } : t.row ? { status: "open" } : {};
    }
    view.listed = s.runIds;
  }
  view.agentStatus = agentExpected(agent);
  const open = Object.values(view.incidents).filter((i) => i?.status === "open").length;
  view.overview = { running: Object.values(view.runs).filter((r) => r.status === "running").length, openIncidents: open };
  view.openIncidentRows = open;
  return view;
}

type ConsoleRun = {
  kind: string;
  status: string;
  phase: string | null;
  step: string | null;
  statusMessage?: string | null;
  error: string | null;
  attempt: number | null;
  snapshotPreview?: string | null;
};

/** What the console shows for the same runs: its run pages' JSON, its incident pages' JSON, its agent view and list. */
export async function consoleView(
  s: { agentClass: string; agentName: string; kind: string },
  sdk: View,
  before: OverviewFigures,
  incidentIdOf: (runId: string) => string = (id) => fiberIncidentId(s.agentClass, s.agentName, id),
): Promise<View> {
  const owner = `agentClass=${encodeURIComponent(s.agentClass)}&agentName=${encodeURIComponent(s.agentName)}`;
  const view: View = { runs: {}, incidents: {}, listed: [] };
  for (const id of Object.keys(sdk.runs)) {
    const res = await call(`/runs/${encodeURIComponent(id)}?${owner}`, { as: VIEWER, headers: { Accept: "application/json" } });
    if (res.status === 404) {
      view.runs[id] = { status: "(not shown)" };
      continue;
    }
    const { run } = (await res.json()) as { run: ConsoleRun };
    view.runs[id] = {
      kind: run.kind,
      status: run.status,
      phase: run.phase,
      step: run.step,
      statusMessage: run.statusMessage ?? null,
      error: run.error,
      attempt: run.attempt,
      // A missing field would read as "no stash" and agree with anything: the run's JSON must carry it.
      snapshot: "snapshotPreview" in run ? run.snapshotPreview : "(field missing)",
    };
  }
  for (const id of Object.keys(sdk.incidents)) {
    const incidentId = incidentIdOf(id);
    const res = await call(`/incidents/${encodeURIComponent(incidentId)}?${owner}`, { as: VIEWER, headers: { Accept: "application/json" } });
    if (res.status === 404) {
      view.incidents[id] = null;
      continue;
    }
    const { incident } = (await res.json()) as { incident: { status: string; reason: string | null; attempts: number } };
    view.incidents[id] = { status: incident.status, reason: incident.reason, attempts: incident.attempts };
  }
  const agent = await call(`/api/agents/${encodeURIComponent(s.agentClass)}/${encodeURIComponent(s.agentName)}`, { as: VIEWER });
  const live = (await agent.json()) as { ok: boolean; value?: { status: { status: string } } };
  view.agentStatus = live.ok ? live.value!.status.status : "(unanswered)";
  const list = await call(`/runs?${owner}&limit=100`, { as: VIEWER, headers: { Accept: "application/json" } });
  view.listed = ((await list.json()) as { items: { runId: string }[] }).items.map((r) => r.runId);
  const after = await overviewFigures();
  view.overview = { running: (after.running[s.kind] ?? 0) - (before.running[s.kind] ?? 0), openIncidents: after.openIncidents - before.openIncidents };
  const openList = await call(`/incidents?${owner}&status=open&limit=100`, { as: VIEWER, headers: { Accept: "application/json" } });
  view.openIncidentRows = ((await openList.json()) as { items: unknown[] }).items.length;
  if (sdk.numbering) view.numbering = await numberingOf(s.agentClass, s.agentName);
  return view;
}

/** The agent's event numbering as the agents list and its "events missing" list show it (JSON). */
async function numberingOf(agentClass: string, agentName: string): Promise<View["numbering"]> {
  type Item = { agentClass: string; agentName: string; seqMax: number | null };
  const find = async (extra: string) => {
    const res = await call(`/agents?agentClass=${encodeURIComponent(agentClass)}${extra}&limit=200`, { as: VIEWER, headers: { Accept: "application/json" } });
    return ((await res.json()) as { items: Item[] }).items.find((a) => a.agentName === agentName);
  };
  const listed = await find("");
  if (listed && !("seqMax" in listed)) throw new Error("the agents list's JSON no longer carries seqMax: this check would agree with anything");
  return { highest: listed ? listed.seqMax : null, onGapsList: (await find("&gaps=true")) !== undefined };
}
