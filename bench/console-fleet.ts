/**
 * A synthetic fleet for the console bench: 7 days of telemetry from many agents (a few hot ones), written
 * into local D1 through ingest's own pure mapping (toRows) and its own statements (projectionStatements:
 * multi-row INSERT … SELECT FROM json_each(?) with one JSON parameter each, events + rollups + the six
 * projections), so every column is exactly what the Queue consumer writes — timeline_id included. Only
 * ingest's zod validation is skipped for speed; every 97th event is validated with parseEvent instead.
 *
 * The shapes follow the runtime: session turns run as `session-turn` fibers with op.* ledger events and
 * backups; evicted turns become turn incidents (plus a fiber incident per recovered fiber, as the SDK
 * reports them), some leaving an ambiguous paid op; background fibers stash, complete, fail or get
 * recovered; chat agents exhaust recoveries for the SDK's reasons; operators leave audit rows.
 */
import { env } from "cloudflare:workers";
import {
  EXHAUSTION_REASONS,
  fiberIncidentId,
  newEventId,
  parseEvent,
  SCHEMA_VERSION,
  type Source,
  type TelemetryEvent,
  turnIncidentId,
} from "@agent-oncall/telemetry";
import { SeededRandom } from "../test/fixtures/seeded-random";
import { projectionStatements } from "../worker/ingest/projections";
import { toRows } from "../worker/ingest/rows";

export const FLEET = { events: 1_000_000, fibers: 100_000, incidents: 10_000, sessions: 10_000, audit: 2_000, days: 7 } as const;

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
/** Events handed to one db.batch (one transaction), as a consumer would after a burst. */
const CHUNK_EVENTS = 20_000;
/** The JSON parameter cap ingest uses (projections.ts), also used for the audit rows. */
const MAX_PARAM_BYTES = 900_000;
const TURN_INCIDENTS = 1_500;
const BG_FIBER_INCIDENTS = 2_500;
const MAX_TURN_RECOVERIES = 5;
const BACKUP_TTL_MS = 7 * DAY;

/** The fleet's ids on top of the shared seeded generator: the same fleet on every run. */
class Rand extends SeededRandom {
  f(): number {
    return this.next();
  }
  nano(n = 21): string {
    return this.word(n, "ModuleSymbhasOwnPr-0123456789ABCDEFGHNRVfgctiUvz_KqYTJkLxpZXIjQW");
  }
  uuid(): string {
    const h = this.hex(32);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
  }
}

/** A time in [lo, hi] with a day/night rhythm (busiest mid-afternoon UTC). */
function when(r: Rand, lo: number, hi: number): number {
  for (;;) {
    const t = lo + Math.floor(r.f() * (hi - lo));
    const hour = (t / HOUR) % 24;
    if (r.f() < 0.3 + 0.7 * (0.5 - 0.5 * Math.cos((2 * Math.PI * (hour - 3)) / 24))) return t;
  }
}

const preview = (v: unknown, chars = 240) => {
  const text = typeof v === "string" ? v : JSON.stringify(v);
  return { preview: text.length > chars ? text.slice(0, chars) : text, bytes: text.length, truncated: text.length > chars };
};

const TENANTS = [
  "acme",
  "globex",
  "initech",
  "umbrella",
  "stark",
  "wayne",
  "hooli",
  "vandelay",
  "wonka",
  "tyrell",
  "soylent",
  "cyberdyne",
  "aperture",
  "massive",
  "oscorp",
].flatMap((a) => ["labs", "corp", "io", "hq", "systems", "group", "cloud", "ai", "works", "dynamics"].map((b) => `${a}-${b}`));
const BG_CLASSES = [
  { agentClass: "EtlAgent", short: "etl", jobs: ["nightly-sync", "ingest-batch", "reindex"] },
  { agentClass: "ResearchAgent", short: "research", jobs: ["deep-research", "crawl-site", "summarise"] },
  { agentClass: "BillingAgent", short: "billing", jobs: ["invoice-run", "charge-retry", "usage-rollup"] },
] as const;
const CHAT_CLASSES = ["SupportChat", "SalesChat"] as const;
const SESSION_CLASSES = ["SupportSession", "CodingSession"] as const;
const TOOLS = [
  ["tool.search_docs", true],
  ["tool.lookup_order", true],
  ["tool.refund_payment", false],
  ["tool.send_email", false],
  ["tool.create_ticket", false],
] as const;
const OPERATORS = ["alice@example.com", "bob@example.com", "carol@sre.example.com", "dave@sre.example.com", "erin@example.com", "frank@example.com"];

type Session = { src: Source; tenant: string; environment: string; turns: number[] };
type TurnIncident = { outcome: "recovered" | "exhausted" | "open"; recoveries: number; ambiguous: boolean };
type Entity =
  | { kind: "fiber"; t: number; seed: number; src: Source; job: string; fiberId: string; recovery: "handled" | "failed" | "skipped" | "open" | null }
  | { kind: "turn"; t: number; seed: number; session: Session; seq: number; fiberIds: string[]; inc: TurnIncident | null }
  | { kind: "chat"; t: number; seed: number; src: Source; outcome: "completed" | "exhausted" | "failed" | "skipped" | "open" }
  | { kind: "audit"; t: number; seed: number; src: Source };

export type FleetPicks = {
  /** The hottest background agent (most fiber runs). */
  hotAgent: Source;
  /** One of its fibers with the longest history (stashes, eviction, recovery). */
  fiberId: string;
  /** An exhausted session-turn incident: the longest incident timeline the runtime produces. */
  incidentId: string;
  /** The session with the most turns. */
  sessionName: string;
};

type Plan = { entities: Entity[]; picks: FleetPicks; agents: { chat: Source[]; bg: Source[] } };

/** Decides the fleet's structure: who exists, what happened when, and exact entity counts. */
function plan(now: number): Plan {
  const r = new Rand(20261101);
  const start = now - FLEET.days * DAY;
  const bgAgents: Source[] = [];
  for (const c of BG_CLASSES)
    for (let i = 0; i < 800; i++)
      bgAgents.push({ agentClass: c.agentClass, agentName: `${TENANTS[i % TENANTS.length]}-${c.short}-${String(i).padStart(3, "0")}` });
  // Interleave classes so the hot end of the skew is a mix of them.
  bgAgents.sort((a, b) => (a.agentName.slice(-3) + a.agentClass < b.agentName.slice(-3) + b.agentClass ? -1 : 1));
  const chatAgents: Source[] = Array.from({ length: 1_600 }, (_, i) => ({
    agentClass: CHAT_CLASSES[i % 2]!,
    agentName: `user-${String(100_000 + i * 37).padStart(6, "0")}`,
  }));

  // Sessions and their turns.
  const sessions: Session[] = [];
  const turns: Extract<Entity, { kind: "turn" }>[] = [];
  for (let s = 0; s < FLEET.sessions; s++) {
    const tenant = TENANTS[r.skew(TENANTS.length, 2)]!;
    const session: Session = {
      src: { agentClass: r.pick(SESSION_CLASSES), agentName: `${tenant}-${r.hex(10)}` },
      tenant,
      environment: r.weighted([
        ["prod", 70],
        ["staging", 20],
        ["dev", 10],
      ] as const),
      turns: [],
    };
    const first = when(r, start, now - 5 * MIN);
    const span = Math.min(now - 1_000 - first, r.int(10 * MIN, 3 * DAY));
    const n = 1 + Math.floor(r.f() ** 2 * 14);
    const times = [first, ...Array.from({ length: n - 1 }, () => first + Math.floor(r.f() * span))].sort((a, b) => a - b);
    times.forEach((t, i) => {
      turns.push({ kind: "turn", t, seed: (r.f() * 2 ** 31) | 0, session, seq: i + 1, fiberIds: [], inc: null });
    });
    session.turns = times;
    sessions.push(session);
  }
  // Turn incidents: evictions mid-turn, on turns old enough for their recovery to have played out.
  const eligible = turns.filter((t) => t.t < now - 2 * HOUR);
  for (let k = 0; k < TURN_INCIDENTS; k++) {
    const i = k + Math.floor(r.f() * (eligible.length - k));
    [eligible[k], eligible[i]] = [eligible[i]!, eligible[k]!];
    const turn = eligible[k]!;
    const outcome = r.weighted([
      ["recovered", 82],
      ["exhausted", 9],
      ["open", 9],
    ] as const);
    turn.inc = {
      outcome,
      recoveries:
        outcome === "exhausted"
          ? MAX_TURN_RECOVERIES + 1
          : outcome === "open"
            ? 1
            : r.weighted([
                [1, 80],
                [2, 15],
                [3, 5],
              ] as const),
      ambiguous: r.chance(0.7),
    };
  }
  let turnFibers = 0;
  let turnFiberIncidents = 0;
  for (const t of turns) {
    const n = !t.inc ? 1 : t.inc.outcome === "recovered" ? t.inc.recoveries + 1 : t.inc.recoveries;
    for (let i = 0; i < n; i++) t.fiberIds.push(r.nano());
    turnFibers += n;
    turnFiberIncidents += t.inc ? t.inc.recoveries : 0;
  }

  // Background fibers: the rest of the 100k runs, on skewed agents; some evicted and recovered.
  const fibers: Extract<Entity, { kind: "fiber" }>[] = [];
  const bgCount = FLEET.fibers - turnFibers;
  for (let i = 0; i < bgCount; i++) {
    const src = bgAgents[r.skew(bgAgents.length)]!;
    const cls = BG_CLASSES.find((c) => c.agentClass === src.agentClass)!;
    fibers.push({ kind: "fiber", t: when(r, start, now - 2_000), seed: (r.f() * 2 ** 31) | 0, src, job: r.pick(cls.jobs), fiberId: r.nano(), recovery: null });
  }
  // Old enough that stashes (≤ 7 × 20 min) and the recovery have happened before `now`.
  const evictable = fibers.filter((f) => f.t < now - 3 * HOUR);
  for (let k = 0; k < BG_FIBER_INCIDENTS; k++) {
    const i = k + Math.floor(r.f() * (evictable.length - k));
    [evictable[k], evictable[i]] = [evictable[i]!, evictable[k]!];
    evictable[k]!.recovery = r.weighted([
      ["handled", 75],
      ["failed", 12],
      ["skipped", 8],
      ["open", 5],
    ] as const);
  }

  // Chat recovery incidents: whatever is left of the 10k incidents; a quarter in a storm on one hot agent 3–5 h ago.
  const chatCount = FLEET.incidents - TURN_INCIDENTS - turnFiberIncidents - BG_FIBER_INCIDENTS;
  const chats: Entity[] = [];
  for (let i = 0; i < chatCount; i++) {
    const storm = r.chance(0.25);
    const src = storm ? chatAgents[0]! : chatAgents[r.skew(chatAgents.length)]!;
    const t = storm ? when(r, now - 5 * HOUR, now - 3 * HOUR) : when(r, start, now - HOUR);
    const outcome = storm
      ? r.weighted([
          ["exhausted", 70],
          ["completed", 25],
          ["open", 5],
        ] as const)
      : r.weighted([
          ["completed", 58],
          ["exhausted", 28],
          ["failed", 7],
          ["skipped", 4],
          ["open", 3],
        ] as const);
    chats.push({ kind: "chat", t, seed: (r.f() * 2 ** 31) | 0, src, outcome });
  }
  const audits: Entity[] = [];
  for (let i = 0; i < FLEET.audit; i++) {
    const src = r.chance(0.5)
      ? sessions[r.skew(sessions.length, 2)]!.src
      : r.chance(0.6)
        ? bgAgents[r.skew(bgAgents.length)]!
        : chatAgents[r.skew(chatAgents.length)]!;
    audits.push({ kind: "audit", t: when(r, start, now - MIN), seed: (r.f() * 2 ** 31) | 0, src });
  }

  const entities: Entity[] = [...turns, ...fibers, ...chats, ...audits].sort((a, b) => a.t - b.t);

  // What the bench drills into.
  const perAgent = new Map<string, number>();
  for (const f of fibers) perAgent.set(`${f.src.agentClass}/${f.src.agentName}`, (perAgent.get(`${f.src.agentClass}/${f.src.agentName}`) ?? 0) + 1);
  const hotKey = [...perAgent.entries()].sort((a, b) => b[1] - a[1])[0]![0];
  const hotAgent = bgAgents.find((a) => `${a.agentClass}/${a.agentName}` === hotKey)!;
  const hotFiber = fibers.find((f) => f.src === hotAgent && f.recovery === "handled") ?? fibers.find((f) => f.src === hotAgent)!;
  const exhaustedTurn = turns.find((t) => t.inc?.outcome === "exhausted" && t.inc.ambiguous) ?? turns.find((t) => t.inc?.outcome === "exhausted")!;
  const busiest = sessions.reduce((a, b) => (b.turns.length > a.turns.length ? b : a));
  return {
    entities,
    agents: { chat: chatAgents, bg: bgAgents },
    picks: {
      hotAgent,
      fiberId: hotFiber.fiberId,
      incidentId: turnIncidentId(exhaustedTurn.session.src.agentClass, exhaustedTurn.session.src.agentName, exhaustedTurn.seq),
      sessionName: busiest.src.agentName,
    },
  };
}

/** Builds events for one entity; events later than `now` have not happened yet and are dropped. */
class Emitter {
  readonly out: TelemetryEvent[] = [];
  readonly audit: Record<string, unknown>[] = [];
  constructor(private readonly now: number) {}

  private trace = "";
  private r = new Rand(1);

  ev(type: TelemetryEvent["type"], time: number, src: Source, corr: TelemetryEvent["corr"], payload: unknown): void {
    if (time > this.now) return;
    this.out.push({
      v: SCHEMA_VERSION,
      id: newEventId(time),
      time,
      type,
      source: src,
      corr: { ...corr, traceId: this.trace, spanId: this.r.hex(16) },
      payload,
    } as TelemetryEvent);
  }

  entity(e: Entity): void {
    this.r = new Rand(e.seed);
    this.trace = this.r.hex(32);
    if (e.kind === "fiber") this.fiber(e);
    else if (e.kind === "turn") this.turn(e);
    else if (e.kind === "chat") this.chat(e);
    else this.admin(e);
  }

  private fiber(e: Extract<Entity, { kind: "fiber" }>): void {
    const r = this.r;
    const fiberName = e.job;
    const corr = { fiberId: e.fiberId };
    let t = e.t;
    this.ev("fiber.started", t, e.src, corr, { fiberName, managed: r.chance(0.3) });
    const stashes = r.int(0, 6);
    const step = e.job === "crawl-site" ? r.int(30_000, 20 * MIN) : r.int(500, 90_000);
    for (let i = 1; i <= stashes; i++) {
      t += r.int(step / 2, step);
      const big = r.chance(0.08);
      const snap = {
        step: i,
        cursor: `${e.job}/part-${String(i * r.int(1, 400)).padStart(5, "0")}`,
        processed: i * r.int(100, 5_000),
        ...(big ? { rows: Array.from({ length: 40 }, (_, k) => ({ id: `row_${r.hex(8)}`, ok: k % 7 !== 0 })) } : {}),
      };
      this.ev("fiber.stashed", t, e.src, corr, { fiberName, snapshot: preview(snap) });
    }
    t += r.int(step / 2, step);
    if (e.recovery) {
      const inc = { fiberId: e.fiberId, incidentId: fiberIncidentId(e.src.agentClass, e.src.agentName, e.fiberId) };
      this.ev("fiber.interrupted", t, e.src, corr, { fiberName });
      t += r.int(1_000, 90_000);
      this.ev("fiber.recovery.detected", t, e.src, inc, { fiberName });
      this.ev("fiber.recovery.attempt", (t += r.int(5, 400)), e.src, inc, { fiberName });
      t += r.int(200, 30_000);
      if (e.recovery === "handled") this.ev("fiber.recovery.handled", t, e.src, inc, { fiberName, status: "recovered" });
      else if (e.recovery === "failed")
        this.ev("fiber.recovery.failed", t, e.src, inc, {
          fiberName,
          error: r.pick([
            "cannot resume: cursor expired",
            "TypeError: Cannot read properties of undefined (reading 'rows')",
            "upstream 503 while reopening the export",
          ]),
          reason: "handler_error",
        });
      else if (e.recovery === "skipped")
        this.ev("fiber.recovery.skipped", t, e.src, inc, { fiberName, reason: r.pick(["no_handler", "snapshot_missing", "fiber_cancelled"]) });
      return;
    }
    if (r.chance(0.06))
      this.ev("fiber.failed", t, e.src, corr, {
        fiberName,
        elapsedMs: t - e.t,
        error: r.pick([
          "RangeError: Maximum call stack size exceeded",
          "D1_ERROR: too many SQL variables",
          "fetch failed: upstream timed out after 30000 ms",
          "invoice total mismatch: 1204.50 != 1204.05",
        ]),
      });
    else this.ev("fiber.completed", t, e.src, corr, { fiberName, elapsedMs: t - e.t });
  }

  private turn(e: Extract<Entity, { kind: "turn" }>): void {
    const r = this.r;
    const { src, tenant, environment } = e.session;
    const sessionName = src.agentName;
    const ses = { sessionName };
    const turnSeq = e.seq;
    const fiberName = "session-turn";
    const opCorr = () => ({ opId: `op_${r.hex(32)}`, sessionName });
    let t = e.t;
    let fi = 0;
    const startFiber = (resumed: boolean) => {
      this.ev("fiber.started", t, src, { fiberId: e.fiberIds[fi]! }, { fiberName, managed: false });
      this.ev("session.status_running", (t += r.int(1, 20)), src, ses, { turnSeq, ...(resumed ? { detail: "resumed after eviction" } : {}) });
    };
    const stash = (step: number, pendingTool: string | null, streamedChars: number) =>
      this.ev(
        "fiber.stashed",
        (t += r.int(5, 200)),
        src,
        { fiberId: e.fiberIds[fi]! },
        { fiberName, snapshot: preview({ turnSeq, step, pendingTool, streamedChars }) },
      );
    const op = (opKind: string, idempotent: boolean, complete: boolean) => {
      const c = opCorr();
      this.ev("op.started", (t += r.int(2, 50)), src, c, { opKind, turnSeq, idempotent });
      if (complete) this.ev("op.completed", (t += r.int(300, 20_000)), src, c, { opKind, turnSeq, idempotent, resultRef: `session_ops/${c.opId}` });
      return c;
    };
    const finish = (incidentId?: string, detail?: string) => {
      this.ev("fiber.completed", (t += r.int(5, 100)), src, { fiberId: e.fiberIds[fi]! }, { fiberName, elapsedMs: t - e.t });
      this.ev("session.status_idle", (t += r.int(1, 20)), src, { ...ses, ...(incidentId ? { incidentId } : {}) }, { turnSeq, ...(detail ? { detail } : {}) });
    };

    startFiber(false);
    const chars = r.int(80, 4_000);
    if (!e.inc) {
      op("model.request", true, true);
      stash(1, null, chars);
      if (r.chance(0.4)) {
        const [tool, idempotent] = r.pick(TOOLS);
        stash(2, tool, chars);
        op(tool, idempotent, true);
        stash(3, null, chars);
        op("model.request", true, true);
      }
      finish();
      if (r.chance(0.3)) {
        const handle = `workspaces/${tenant}/${environment}/${sessionName}/${String(t).padStart(15, "0")}-${r.hex(8)}.json`;
        const scope = { handle, tenant, environment, sessionName };
        this.ev("backup.created", (t += r.int(1_000, 60_000)), src, ses, { ...scope, expiresAt: t + BACKUP_TTL_MS, bytes: r.int(2_000, 6_000_000) });
        if (r.chance(0.1)) this.ev("backup.restored", t + r.int(HOUR, 2 * DAY), src, ses, scope);
      }
      if (turnSeq === e.session.turns.length && r.chance(0.05))
        this.ev("session.status_terminated", t + r.int(MIN, HOUR), src, ses, { detail: "terminated by the owner" });
      return;
    }

    // An eviction mid-turn, possibly with a paid, non-idempotent op in flight.
    const inc = e.inc;
    const turnInc = turnIncidentId(src.agentClass, src.agentName, turnSeq);
    op("model.request", true, true);
    stash(1, null, chars);
    const [tool] = r.pick(TOOLS.filter(([, idem]) => !idem));
    let inFlight: { opId: string; sessionName: string } | null = null;
    if (inc.ambiguous) {
      stash(2, tool, chars);
      inFlight = op(tool, false, false);
    }
    for (let k = 1; k <= inc.recoveries; k++) {
      const fiberId = e.fiberIds[fi]!;
      const fc = { fiberId, incidentId: fiberIncidentId(src.agentClass, src.agentName, fiberId) };
      t += r.int(2_000, 120_000);
      this.ev("fiber.recovery.detected", t, src, fc, { fiberName });
      this.ev("fiber.recovery.attempt", (t += r.int(5, 300)), src, fc, { fiberName });
      if (inc.outcome === "open") {
        this.ev(
          "session.status_rescheduled",
          (t += r.int(5, 300)),
          src,
          { ...ses, incidentId: turnInc },
          { turnSeq, detail: `step 1, ${chars} chars streamed`, recoveryCount: k },
        );
        return;
      }
      if (k > MAX_TURN_RECOVERIES) {
        const message = `turn ${turnSeq} was interrupted ${k} times; recovery stopped after ${MAX_TURN_RECOVERIES} attempts and the session is idle`;
        this.ev("session.error", (t += r.int(5, 300)), src, { ...ses, incidentId: turnInc }, { turnSeq, error: message });
        this.ev("session.status_idle", (t += r.int(1, 20)), src, ses, { turnSeq, detail: "recovery budget exhausted" });
        this.ev("fiber.recovery.handled", (t += r.int(1, 50)), src, fc, { fiberName, status: "gave_up" });
        return;
      }
      this.ev(
        "session.status_rescheduled",
        (t += r.int(5, 300)),
        src,
        { ...ses, incidentId: turnInc },
        { turnSeq, detail: `step ${inFlight ? 2 : 1}, ${chars} chars streamed`, recoveryCount: k },
      );
      this.ev("fiber.recovery.handled", (t += r.int(5, 300)), src, fc, { fiberName, status: "recovered" });
      fi++;
      startFiber(true);
    }
    if (inFlight) {
      const detail = `started at ${new Date(e.t).toISOString()} with no completion recorded; not re-run`;
      this.ev("op.ambiguous", (t += r.int(50, 2_000)), src, inFlight, { opKind: tool, turnSeq, idempotent: false, detail });
      this.ev(
        "fiber.failed",
        (t += r.int(1, 50)),
        src,
        { fiberId: e.fiberIds[fi]! },
        { fiberName, elapsedMs: t - e.t, error: `AmbiguousOpError: ${tool} may have run; not re-issued` },
      );
      this.ev(
        "session.status_idle",
        (t += r.int(1, 20)),
        src,
        { ...ses, incidentId: turnInc },
        { turnSeq, detail: `${tool} (${inFlight.opId}) may have run; not re-issued` },
      );
      if (r.chance(0.6)) {
        const resolution = r.weighted([
          ["verified_ran", 50],
          ["verified_not_ran", 30],
          ["reissued", 10],
          ["abandoned", 10],
        ] as const);
        this.ev("op.resolved", t + r.int(10 * MIN, 12 * HOUR), src, inFlight, { opKind: tool, turnSeq, resolution });
      }
      return;
    }
    op("model.request", true, true);
    finish(turnInc);
  }

  private chat(e: Extract<Entity, { kind: "chat" }>): void {
    const r = this.r;
    const corr = { incidentId: r.uuid(), requestId: `req_${r.nano(16)}` };
    const maxAttempts = r.pick([3, 3, 5]);
    const recoveryKind = r.chance(0.7) ? "retry" : "continue";
    let t = e.t;
    if (r.chance(0.3)) this.ev("chat.stream.stalled", t - r.int(1_000, 30_000), e.src, { requestId: corr.requestId }, { timeoutMs: 30_000 });
    this.ev("chat.recovery.detected", t, e.src, corr, { attempt: 0, maxAttempts, recoveryKind });
    const attempts = e.outcome === "exhausted" ? maxAttempts : e.outcome === "skipped" ? 0 : r.int(1, maxAttempts);
    for (let a = 1; a <= attempts; a++) {
      this.ev("chat.recovery.scheduled", (t += r.int(100, 5_000)), e.src, corr, { attempt: a, maxAttempts, recoveryKind });
      this.ev("chat.recovery.attempt", (t += r.int(1_000, 60_000)), e.src, corr, { attempt: a, maxAttempts, recoveryKind });
    }
    t += r.int(1_000, 120_000);
    const base = { attempt: attempts, maxAttempts, recoveryKind };
    if (e.outcome === "completed") this.ev("chat.recovery.completed", t, e.src, corr, base);
    else if (e.outcome === "failed")
      this.ev("chat.recovery.failed", t, e.src, corr, { ...base, reason: r.pick(["model_error", "tool_error", "storage_error"]) });
    else if (e.outcome === "skipped") this.ev("chat.recovery.skipped", t, e.src, corr, { ...base, reason: r.pick(["client_disconnected", "stale_request"]) });
    else if (e.outcome === "exhausted") {
      const reason = r.weighted(EXHAUSTION_REASONS.map((x, i) => [x, [45, 25, 12, 8, 6, 4][i]!] as const));
      const partial =
        `I checked order ${r.int(10_000, 99_999)} and the refund for ${r.pick(["the duplicate charge", "the late delivery", "the cancelled plan"])} is `.repeat(
          r.int(1, 12),
        );
      this.ev("chat.recovery.exhausted", t, e.src, corr, {
        ...base,
        reason,
        partialText: preview(partial),
        ...(r.chance(0.5) ? { partialParts: { count: r.int(1, 9), bytes: r.int(200, 40_000) } } : {}),
        terminalMessage: preview("Sorry - I could not finish this answer. Please try again, or ask for a human agent."),
      });
    }
  }

  private admin(e: Extract<Entity, { kind: "audit" }>): void {
    const r = this.r;
    const action = r.chance(0.6) ? "force_idle" : "trigger_alarm";
    const result = r.weighted([
      ["ok", 70],
      ["noop", 10],
      ["error", 8],
      ["denied", 10],
      ["invalid", 2],
    ] as const);
    const actor = result === "denied" ? `viewer${r.int(1, 40)}@example.com` : r.pick(OPERATORS);
    const status = (s: string) => ({
      status: s,
      runCount: r.int(0, 4),
      nextAlarm: r.chance(0.5) ? e.t + r.int(MIN, HOUR) : null,
      schedules: Array.from({ length: r.int(0, 3) }, () => ({
        id: r.hex(12),
        callback: r.pick(["idleCheck", "sweepBackups", "retryTurn"]),
        time: e.t + r.int(MIN, DAY),
        running: false,
      })),
      pendingScheduleCount: r.int(0, 3),
      chatRecoveryIncidents: [],
    });
    const ok = result === "ok" || result === "noop";
    const before = ok ? status(r.pick(["running", "stuck", "recovering"])) : null;
    const after = ok ? status("idle") : null;
    const reason = r.pick([
      "stuck turn blocking the queue, customer waiting",
      "recovery loop for 40 min (INC-2291)",
      "alarm did not fire after deploy",
      "paged: exhaustion storm",
      "checking a suspected double charge",
    ]);
    const error =
      result === "error"
        ? "unavailable: the agent could not be reached: timed out after 10000 ms"
        : result === "denied"
          ? `not_permitted: refused: ${actor} has the viewer role; this action needs operator`
          : result === "invalid"
            ? "invalid_input: reason: is required"
            : null;
    this.audit.push({
      id: r.uuid(),
      time: e.t,
      actor,
      role: result === "denied" ? "viewer" : "operator",
      action,
      target_class: e.src.agentClass,
      target_name: e.src.agentName,
      reason: result === "invalid" ? "" : reason,
      before: before && JSON.stringify(before),
      after: after && JSON.stringify(after),
      result,
      error,
    });
    const summary = (s: ReturnType<typeof status> | null) =>
      s ? { status: s.status, runCount: s.runCount, nextAlarm: s.nextAlarm, chatRecoveryIncidents: 0 } : undefined;
    this.ev(
      action === "force_idle" ? "admin.force_idle" : "admin.trigger_alarm",
      e.t + r.int(5, 200),
      e.src,
      {},
      {
        actor,
        reason: result === "invalid" ? "(none given)" : reason,
        result: result === "invalid" ? "error" : result,
        ...(before ? { before: summary(before) } : {}),
        ...(after ? { after: summary(after) } : {}),
      },
    );
  }

  /** The rest of the traffic: SDK events we do not model, context compactions, stalls, repairs. */
  filler(r: Rand, start: number, agents: { chat: Source[]; bg: Source[] }): void {
    const t = when(r, start, this.now - 1_000);
    const chat = r.chance(0.75);
    const src = chat ? agents.chat[r.skew(agents.chat.length)]! : agents.bg[r.skew(agents.bg.length)]!;
    this.r = r;
    this.trace = r.hex(32);
    const kind = chat
      ? r.weighted([
          ["sdk", 45],
          ["compacted", 35],
          ["stalled", 10],
          ["repaired", 10],
        ] as const)
      : "sdk";
    const requestId = `req_${r.nano(16)}`;
    if (kind === "compacted")
      this.ev(
        "chat.context.compacted",
        t,
        src,
        { requestId },
        { mode: r.chance(0.8) ? "proactive" : "reactive", shortened: r.chance(0.9), ...(r.chance(0.3) ? { attempt: r.int(1, 3) } : {}) },
      );
    else if (kind === "stalled") this.ev("chat.stream.stalled", t, src, { requestId }, { timeoutMs: 30_000 });
    else if (kind === "repaired")
      this.ev(
        "chat.transcript.repaired",
        t,
        src,
        { requestId },
        { removedToolCalls: r.int(0, 3), normalizedInputs: r.int(0, 5), toolCallIds: [`call_${r.hex(12)}`] },
      );
    else {
      const sdkType = r.pick([
        "rpc",
        "schedule:create",
        "schedule:execute",
        "state:update",
        "connect",
        "message:request",
        "message:response",
        "mcp:client:connect",
      ]);
      this.ev(
        "sdk.event",
        t,
        src,
        {},
        { sdkType, data: preview({ method: r.pick(["getState", "chat", "runTask", "sync"]), connectionId: r.uuid(), durationMs: r.int(1, 2_000) }) },
      );
    }
  }
}

export type SeedResult = {
  ms: number;
  picks: FleetPicks;
  counts: Record<"events" | "runs" | "incidents" | "sessions" | "workspace_backups" | "audit_log" | "op_ambiguities" | "agents" | "event_rollups", number>;
};

const TABLES = ["events", "runs", "incidents", "sessions", "workspace_backups", "audit_log", "op_ambiguities", "agents", "event_rollups"] as const;

async function countRows(db: D1Database): Promise<SeedResult["counts"]> {
  const rs = await db.batch<{ n: number }>(TABLES.map((t) => db.prepare(`SELECT COUNT(*) AS n FROM ${t}`)));
  return Object.fromEntries(TABLES.map((t, i) => [t, Number(rs[i]!.results[0]!.n)])) as SeedResult["counts"];
}

/** Writes the fleet into `db` with ingest's own statements, chunk by chunk in time order, then the audit rows. */
export async function seedFleet(db: D1Database = env.DB): Promise<SeedResult> {
  const t0 = performance.now();
  const before = await countRows(db);
  const now = Date.now();
  const { entities, picks, agents } = plan(now);
  const em = new Emitter(now);
  let written = 0;
  let invalid: string | null = null;
  const checked = new Map<string, number>();
  // One D1 batch (one transaction) per chunk, as a consumer writes a batch. (Building the next chunk while D1 writes measured no faster here.)
  const flush = async () => {
    const events = em.out.splice(0).sort((a, b) => a.time - b.time);
    if (!events.length) return;
    for (const e of events) {
      // Ingest validates (so strips and orders) payloads with zod: the first 200 of each type and every 97th must come out unchanged.
      const n = checked.get(e.type) ?? 0;
      checked.set(e.type, n + 1);
      if (n >= 200 && (written + n) % 97 !== 0) continue;
      const v = parseEvent(e);
      if (!v.ok) invalid ??= `${e.type}: ${v.reason}`;
      else if (JSON.stringify(v.event.payload) !== JSON.stringify(e.payload))
        invalid ??= `${e.type}: validation changes its payload to ${JSON.stringify(v.event.payload)}`;
    }
    if (invalid) throw new Error(`seeded an event ingest would reject or change: ${invalid}`);
    written += events.length;
    const rows = toRows(events, events[events.length - 1]!.time + 1_500);
    await db.batch(projectionStatements(db, rows.events, rows.projections, rows.rollups));
  };
  for (const e of entities) {
    em.entity(e);
    if (em.out.length >= CHUNK_EVENTS) await flush();
  }
  await flush();
  const r = new Rand(7);
  const start = now - FLEET.days * DAY;
  if (written > FLEET.events) throw new Error(`the fleet plan produced ${written} events before filler, more than ${FLEET.events}`);
  while (written < FLEET.events) {
    const n = Math.min(CHUNK_EVENTS, FLEET.events - written);
    for (let i = 0; i < n; i++) em.filler(r, start, agents);
    await flush();
  }
  // Audit rows go where the admin client writes them, with the same columns (src/store/audit.ts).
  const json = em.audit.map((a) => JSON.stringify(a));
  const stmts: D1PreparedStatement[] = [];
  const cols = ["id", "time", "actor", "role", "action", "target_class", "target_name", "reason", "before", "after", "result", "error"];
  const sql = `INSERT INTO audit_log (${cols.join(", ")}) SELECT ${cols.map((c) => `j ->> '$.${c}'`).join(", ")} FROM (SELECT value AS j FROM json_each(?1))`;
  for (let i = 0, bytes = 0, from = 0; i <= json.length; i++) {
    if (i === json.length || bytes + json[i]!.length + 1 > MAX_PARAM_BYTES) {
      if (i > from) stmts.push(db.prepare(sql).bind(`[${json.slice(from, i).join(",")}]`));
      from = i;
      bytes = 0;
    }
    if (i < json.length) bytes += json[i]!.length + 1;
  }
  await db.batch(stmts);
  const after = await countRows(db);
  const counts = Object.fromEntries(TABLES.map((t) => [t, after[t] - before[t]])) as SeedResult["counts"];
  const want = { events: FLEET.events, runs: FLEET.fibers, incidents: FLEET.incidents, sessions: FLEET.sessions, audit_log: FLEET.audit };
  for (const [t, n] of Object.entries(want))
    if (counts[t as keyof typeof counts] !== n) throw new Error(`seeded ${counts[t as keyof typeof counts]} ${t}, expected ${n}`);
  return { ms: performance.now() - t0, picks, counts };
}

/**
 * The first `n` events the fleet's entities emit (its runs, turns, incidents and ops, without filler), sorted by
 * time: the same shapes seedFleet writes, for benches that need the events themselves (the R2 history's).
 */
export function fleetEvents(n: number, now = Date.now()): TelemetryEvent[] {
  const { entities } = plan(now);
  const em = new Emitter(now);
  for (const e of entities) {
    em.entity(e);
    if (em.out.length >= n) break;
  }
  return em.out.slice(0, n).sort((a, b) => a.time - b.time);
}
