import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { EVENT_TYPES, MAX_EVENT_BYTES, SCHEMA_VERSION, turnIncidentId } from "@agent-oncall/telemetry";
import worker from "../../worker/index";
import { SeededRandom as Rng } from "../fixtures/seeded-random";
import { accessToken, ORIGIN, USERS, type Who } from "../worker/routes/harness";

/**
 * The seeded generator behind the fuzz tests (events.fuzz.test.ts, routes.fuzz.test.ts), and the checks
 * both apply to what comes back. Everything that decides WHAT is sent comes from the seeded PRNG, so a
 * failure reproduces with the same seed (FUZZ_SEED, printed by each test). Only the run nonce, which
 * namespaces ids so that reruns against one D1 never collide, and the clock differ between runs.
 *
 * The expectations (stored / dead-lettered) are derived from the documented contract
 * (src/telemetry/envelope.ts, payloads.ts, worker/ingest/bounds.ts), never from the code under test.
 */

export const DEFAULT_SEED = 20_261_122;

/** The seed: FUZZ_SEED from the environment when set (to replay or explore), else the default. */
export function fuzzSeed(): number {
  const raw = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.FUZZ_SEED;
  const n = raw === undefined ? Number.NaN : Number(raw);
  return Number.isSafeInteger(n) ? n : DEFAULT_SEED;
}

// ----- hostile values -----

/** Markup and script payloads. Each one is detected by RAW_MARKUP when it appears unescaped. */
export const MARKUP = [
  "<script>alert(1)</script>",
  '"><img src=x onerror=alert(2)>',
  "'><svg/onload=alert(3)>",
  "</textarea><script>alert(4)</script>",
  '<a href="javascript:alert(5)">x</a>',
  "<iframe srcdoc='<script>alert(6)</script>'></iframe>",
] as const;

/** What must never appear in an HTML body: the payloads above, as markup. */
export const RAW_MARKUP: readonly RegExp[] = [
  /<script>alert\(/i,
  /<img src=x onerror=/i,
  /<svg\/onload=/i,
  /<\/textarea><script>/i,
  /<a href="javascript:/i,
  /<iframe srcdoc=/i,
];

/** Unicode lookalikes, invisible and direction-changing characters, control characters and NUL. */
export const UNICODE = [
  "Sessi\u043enАgent", // Cyrillic о and А
  "\u202Egnp.exe", // right-to-left override
  "zero\u200Bwidth\u200Djoin",
  "\uFEFFbom",
  "ｆｕｌｌｗｉｄｔｈ",
  "emoji 😀🔥",
  "combining e\u0301",
  "nul\u0000byte",
  "bell\u0007 esc\u001b[31mred",
  "line\r\nbreak\ttab",
  "para\u2028sep\u2029",
] as const;

/** A hostile fragment: markup, unicode or control characters. */
export const hostile = (r: Rng): string => (r.chance(0.55) ? r.pick(MARKUP) : r.pick(UNICODE));

/** Path-parameter and query values for the route fuzzer, as they go into a URL (raw: already encoded or deliberately not). */
export function hostileUrlValues(r: Rng): { label: string; raw: string }[] {
  const enc = encodeURIComponent;
  const fixed: { label: string; raw: string }[] = [
    ...MARKUP.map((m, i) => ({ label: `markup ${i + 1}`, raw: enc(m) })),
    { label: "markup, unencoded", raw: "<script>alert(1)</script>" },
    { label: "quotes", raw: enc(`"'\`;--`) },
    { label: "%00", raw: "%00" },
    { label: "NUL inside", raw: "a%00b" },
    { label: "10k chars", raw: "A".repeat(10_000) },
    { label: "10k of markup", raw: enc("<script>alert(1)</script>".repeat(400)) },
    { label: "../", raw: "../" },
    { label: "../../etc/passwd encoded", raw: enc("../../etc/passwd") },
    { label: "..%2F..%2F", raw: "..%2F..%2Fadmin" },
    { label: "invalid percent-encoding %E0%A4%A", raw: "%E0%A4%A" },
    { label: "lone %", raw: "%" },
    { label: "%ZZ", raw: "%ZZ" },
    { label: "overlong UTF-8 %C0%AF", raw: "%C0%AF" },
    { label: "encoded surrogate %ED%A0%80", raw: "%ED%A0%80" },
    { label: "JSON", raw: enc('{"$gt":"","__proto__":{"polluted":1}}') },
    { label: "JSON array", raw: enc('["a",{"b":1}]') },
    { label: "__proto__", raw: "__proto__" },
    { label: "constructor", raw: "constructor" },
    { label: "toString", raw: "toString" },
    { label: "empty", raw: "" },
    { label: "spaces", raw: "%20%20" },
    { label: "-1", raw: "-1" },
    { label: "NaN", raw: "NaN" },
    { label: "1e309", raw: "1e309" },
    ...UNICODE.map((u, i) => ({ label: `unicode ${i + 1}`, raw: enc(u) })),
  ];
  // A few generated mixes, so each seed also tries combinations nobody listed.
  for (let i = 0; i < 6; i++) {
    const parts = Array.from({ length: r.int(2, 4) }, () => hostile(r));
    fixed.push({ label: `mix ${i + 1}`, raw: enc(parts.join(r.pick(["", "/", "?", "&", "#", "%"]))) });
  }
  return fixed;
}

// ----- events -----

export type Identity = { agentClass: string; agentName: string };
/** An event as generated: a plain object whose key order is the wire order. */
export type Ev = Record<string, unknown> & { id: unknown; time: unknown; type: unknown; source: unknown; corr: unknown; payload: unknown };

/**
 * What must become of one item (one event, or one element of a packed array).
 * - stored: in `events` exactly once under `identity` (ids are unique per agent: another agent's event under
 *   the same id is that agent's own);
 * - dead: in dead_letters with a reason, `needle` within the first DEAD_PREFIX chars of its body (or, for an
 *   item without a needle, found by its position in a packed message whose other items have one);
 * - duplicate: reuses the id of an event already stored; that row stays `owner`'s.
 */
export type Item = {
  label: string;
  category: string;
  expect: "stored" | "dead" | "duplicate";
  eventId?: string;
  identity?: Identity;
  owner?: Identity;
  needle?: string;
  /** The event's own number (envelope `seq`), when it carries a valid one: counted once if it is stored. */
  seq?: number;
};

export type ContentType = "text" | "json" | "bytes" | "v8";
export type Message = {
  label: string;
  category: string;
  body: unknown;
  contentType: ContentType;
  /** One item for a single event; one per element for a packed array (same order). */
  items: Item[];
  packed: boolean;
  /** A body with no room for a needle: its dead letter is found by this exact body text (and counted). */
  markerless?: string;
  /** Why this message can only go straight to ingestBatch (the Queue refuses it), when known up front. */
  direct?: string;
};

/** Dead-letter bodies are read up to this many characters when matching needles. */
export const DEAD_PREFIX = 4000;
const DAY = 86_400_000;

/** The victim agent and the ids it owns; its rows must survive every forged event unchanged. */
export function victimOf(nonce: string) {
  const identity = { agentClass: "SessionAgent", agentName: `fz-${nonce}-victim` };
  return {
    identity,
    session: identity.agentName,
    fiberId: `fz-${nonce}-victim-fiber`,
    chat: `req-fz-${nonce}-victim:msg-1`,
    turn: turnIncidentId(identity.agentClass, identity.agentName, 1),
    opId: `fz-${nonce}-victim-op`,
    handle: `ws/fz-${nonce}-victim/b1`,
  };
}
export type Victim = ReturnType<typeof victimOf>;

function envelope(id: unknown, time: unknown, type: unknown, who: Identity, corr: Record<string, unknown>, payload: unknown): Ev {
  return { v: SCHEMA_VERSION, id, time, type, source: { ...who }, corr, payload };
}

/** The victim's life: a running session with a fiber (stashed), a chat incident, a turn incident, an ambiguous op and a backup. */
export function victimEvents(v: Victim, now: number): Ev[] {
  const t = (n: number) => now - 3_600_000 + n * 1000;
  const id = (n: number) => `fzv-${v.identity.agentName}-${n}`;
  const s = { sessionName: v.session };
  const base = { maxAttempts: 3, recoveryKind: "retry" };
  // Numbered 1-4 and 6-9: number 5 never arrives, so the victim's gap is 1 (forged events must not change it).
  return numberVictim([
    envelope(id(1), t(1), "session.status_running", v.identity, s, { turnSeq: 1 }),
    envelope(id(2), t(2), "fiber.started", v.identity, { ...s, fiberId: v.fiberId }, { fiberName: "turn" }),
    envelope(
      id(3),
      t(3),
      "fiber.stashed",
      v.identity,
      { fiberId: v.fiberId },
      { fiberName: "turn", snapshot: { preview: '{"step":1}', bytes: 10, truncated: false } },
    ),
    envelope(id(4), t(4), "chat.recovery.detected", v.identity, { incidentId: v.chat, requestId: "req-1" }, { ...base, attempt: 1 }),
    envelope(id(5), t(5), "chat.recovery.attempt", v.identity, { incidentId: v.chat, requestId: "req-1" }, { ...base, attempt: 1 }),
    envelope(id(6), t(6), "session.status_rescheduled", v.identity, { ...s, incidentId: v.turn }, { turnSeq: 1, recoveryCount: 1 }),
    envelope(id(7), t(7), "op.ambiguous", v.identity, { ...s, opId: v.opId }, { opKind: "payment.charge", turnSeq: 1, detail: "charged once?" }),
    envelope(id(8), t(8), "backup.created", v.identity, s, {
      handle: v.handle,
      tenant: "acme",
      environment: "prod",
      sessionName: v.session,
      expiresAt: now + 7 * DAY,
      bytes: 10,
    }),
  ]);
}

/** The victim's event numbers: 1-4, 6-9 (see victimEvents). */
export const VICTIM_SEQ = { max: 9, seen: 8 } as const;
const numberVictim = (events: Ev[]): Ev[] => events.map((e, i) => ({ ...e, seq: i < 4 ? i + 1 : i + 2 }));

/** Text generators for payload fields: plain, or hostile when the event is a "hostile but valid" one. */
type Text = { name(): string; text(): string; short(max: number): string; code(): string };

function textGen(r: Rng, hostileP: number): Text {
  const plain = () => `${r.pick(["etl", "turn", "charge", "sync", "index"])}-${r.word(4)}`;
  const h = () => (r.chance(hostileP) ? `${plain()} ${hostile(r)}` : plain());
  return { name: h, text: h, short: (max) => h().slice(0, max), code: () => h().slice(0, 200) };
}

const preview = (s: string) => ({ preview: s, bytes: new TextEncoder().encode(s).byteLength, truncated: false });

/** A valid payload of `type` (null for a type this generator does not know: the contract may have grown). */
function payloadOf(type: string, x: Text, r: Rng, now: number, sessionName: string): Record<string, unknown> | null {
  const recovery = { attempt: r.int(0, 5), maxAttempts: r.int(1, 5), recoveryKind: r.pick(["retry", "continue"]) };
  const fiber = { fiberName: x.name() };
  const session = { turnSeq: r.int(0, 50), detail: x.short(2000) };
  const backup = { handle: `ws/${r.word(6)}/${x.code()}`.slice(0, 500), tenant: x.code(), environment: r.pick(["prod", "staging"]), sessionName };
  const admin = {
    actor: `${r.word(5)}@example.com`,
    reason: x.short(2000),
    result: r.pick(["ok", "partial", "noop", "error", "denied"]),
    before: { status: x.name() },
    after: { status: "idle" },
  };
  switch (type) {
    case "fiber.started":
    case "fiber.completed":
    case "fiber.interrupted":
    case "fiber.recovery.detected":
    case "fiber.recovery.attempt":
      return { ...fiber, elapsedMs: r.int(0, 60_000) };
    case "fiber.failed":
      return { ...fiber, error: x.text() };
    case "fiber.stashed":
      return { ...fiber, snapshot: preview(JSON.stringify({ step: r.int(1, 9), note: x.text() })) };
    case "fiber.recovery.handled":
      return { ...fiber, status: x.name() };
    case "fiber.recovery.skipped":
      return { ...fiber, reason: x.text() };
    case "fiber.recovery.failed":
      return { ...fiber, error: x.text(), reason: x.code() };
    case "chat.recovery.detected":
    case "chat.recovery.scheduled":
    case "chat.recovery.attempt":
    case "chat.recovery.completed":
      return recovery;
    case "chat.recovery.skipped":
    case "chat.recovery.failed":
      return { ...recovery, reason: x.text() };
    case "chat.recovery.exhausted":
      return {
        ...recovery,
        reason: x.text() || "max_attempts_exceeded",
        partialText: preview(x.text()),
        partialParts: { count: 2, bytes: 40 },
        terminalMessage: preview(x.text()),
      };
    case "chat.context.compacted":
      return { mode: r.pick(["proactive", "reactive"]), shortened: r.chance(0.5), attempt: r.int(0, 3) };
    case "chat.transcript.repaired":
      return { removedToolCalls: r.int(0, 5), normalizedInputs: r.int(0, 5), toolCallIds: [x.name(), x.name()] };
    case "chat.stream.stalled":
      return { timeoutMs: r.int(1000, 120_000) };
    case "session.status_running":
    case "session.status_idle":
    case "session.status_terminated":
      return session;
    case "session.status_rescheduled":
      return { ...session, recoveryCount: r.int(0, 5) };
    case "session.error":
      return { turnSeq: r.int(0, 50), error: x.short(4000), reason: x.code() };
    case "op.started":
      return { opKind: x.code(), turnSeq: r.int(0, 9), idempotent: r.chance(0.5) };
    case "op.completed":
      return { opKind: x.code(), resultRef: x.short(500) };
    case "op.ambiguous":
      return { opKind: x.code(), detail: x.short(4000) };
    case "op.resolved":
      return { opKind: x.code(), resolution: r.pick(["verified_ran", "verified_not_ran", "reissued", "abandoned"]) };
    case "backup.created":
      return { ...backup, expiresAt: now + 7 * DAY, bytes: r.int(0, 1e6) };
    case "backup.restored":
    case "backup.expired":
      return backup;
    case "admin.force_idle":
    case "admin.trigger_alarm":
      return admin;
    case "model.usage":
      return { inputTokens: r.int(0, 50_000), outputTokens: r.int(0, 5000), model: r.pick(["scripted-chat", "gpt-x"]), attempt: r.int(0, 5) };
    case "alarm.memory_limit_reset":
      return { strikes: r.int(0, 3), limit: 3, sealed: r.chance(0.5), error: x.text() };
    case "schedule.executed":
      return { callback: (x.code() || "tick").slice(0, 200), scheduleId: (x.code() || "sched-1").slice(0, 200) };
    case "task.accepted":
    case "task.attempt.started":
    case "task.completed":
      return { definition: x.code() || "etl@v1", attempt: r.int(0, 5) };
    case "task.attempt.interrupted":
      return { definition: x.code() || "etl@v1", attempt: r.int(0, 5), step: x.short(200) };
    case "task.waiting":
      return { definition: x.code() || "etl@v1", reason: r.pick(["sleep", "retry"]), wakeAt: now + r.int(0, DAY) };
    case "task.failed":
      return { definition: x.code() || "etl@v1", error: x.text() };
    case "task.cancelled":
      return { definition: x.code() || "etl@v1", reason: x.text() };
    case "chat.turn.started":
      return { trigger: r.pick(["submit", "programmatic", "auto-continue"]), admission: r.pick(["queue", "submit"]) };
    case "chat.turn.finished":
      return {
        trigger: "submit",
        status: r.pick(["completed", "error", "aborted", "skipped", x.short(100) || "odd"]),
        durationMs: r.int(0, 60_000),
        error: x.text(),
      };
    case "run.force_idled":
      return { kind: r.pick(["fiber", "managed_fiber", "task", "chat_turn"]), runId: x.code() || "run-1", reason: x.text() || "stuck", stopped: r.chance(0.5) };
    case "run.reconciled":
      return {
        kind: r.pick(["fiber", "managed_fiber", "task", "chat_turn"]),
        runId: x.code() || "run-1",
        finding: r.pick(["ended_unreported", "confirmed_running"]),
        detail: x.short(2000),
      };
    case "incident.force_idled":
      return { reason: x.text() || "stuck" };
    case "incident.reconciled":
      return { finding: r.pick(["not_recovering", "confirmed_open"]), detail: x.short(2000) };
    case "session.reconciled":
      return { finding: "ended_unreported", detail: x.short(2000) };
    case "recovery.paused":
      return { actor: admin.actor, reason: x.short(2000) || "storm", until: now + r.int(1, 7 * DAY) };
    case "recovery.resumed":
      return { actor: admin.actor, reason: x.short(2000) || "fixed", recovered: [x.code() || "fiber-1"] };
    case "recovery.skipped_paused":
      return { kind: r.pick(["fiber", "managed_fiber"]), fiberName: x.short(200), reason: x.short(2000) || "storm", until: now + r.int(0, DAY) };
    case "sdk.event":
      return { sdkType: x.code(), data: preview(x.text()) };
    case "event.too_large":
      return { originalType: "fiber.stashed", bytes: 70_000, limit: MAX_EVENT_BYTES, preview: preview(x.text()) };
    default:
      return null;
  }
}

/** Correlation ids an event of `type` carries, all namespaced by `ns` (and hostile when `hostileIds`). */
function corrOf(type: string, ns: string, r: Rng, who: Identity, hostileIds: boolean): Record<string, string> {
  const idOf = (kind: string) => (hostileIds ? `${ns}-${kind}-${hostile(r)}` : `${ns}-${kind}-${r.word(4)}`).slice(0, 200);
  const c: Record<string, string> = {};
  if (type.startsWith("fiber.")) c.fiberId = idOf("fiber");
  if (type.startsWith("task.")) c.taskId = idOf("task");
  if (type.startsWith("chat.turn.")) c.requestId = idOf("req");
  if (type === "incident.force_idled" || type === "incident.reconciled") c.incidentId = `${idOf("req")}:msg-1`;
  if (type.startsWith("fiber.recovery.")) c.incidentId = `fiber:${who.agentClass}/${who.agentName}/${c.fiberId}`.slice(0, 200);
  if (type.startsWith("chat.recovery.")) {
    c.incidentId = `${idOf("req")}:msg-1`;
    c.requestId = idOf("req");
  }
  if (/^(session|op|backup)\./.test(type)) c.sessionName = idOf("session");
  if (type.startsWith("op.")) c.opId = idOf("op");
  if (type === "session.error" || type === "session.status_rescheduled") c.incidentId = idOf("turn");
  // Usage during a recovery attempt names its incident; outside one, its chat turn.
  if (type === "model.usage") {
    c.requestId = idOf("req");
    if (r.chance(0.5)) c.incidentId = `${idOf("req")}:msg-1`;
  }
  if (r.chance(0.3)) {
    c.traceId = Array.from({ length: 32 }, () => "0123456789abcdef"[r.int(0, 15)]).join("");
    c.spanId = Array.from({ length: 16 }, () => "0123456789abcdef"[r.int(0, 15)]).join("");
  }
  for (const k of Object.keys(c)) if (c[k]!.length > 200) c[k] = c[k]!.slice(0, 200);
  return c;
}

/** One way to break an otherwise valid event; `apply` mutates it. `keepsId` false: the id is gone, so the needle moves to a leading key. */
type Breakage = { label: string; category: string; apply: (e: Ev, ctx: { now: number; r: Rng }) => void; keepsId?: boolean };

const HUGE = [100_000, 110_000, 120_000, 125_000];
const setPayload = (e: Ev, k: string, v: unknown) => void ((e.payload as Record<string, unknown>)[k] = v);

/** An item's `seq` when its event carries a valid one (a positive safe integer). */
const seqOf = (e: Ev): { seq?: number } => (typeof e.seq === "number" && Number.isSafeInteger(e.seq) && e.seq >= 1 ? { seq: e.seq } : {});

/** Ways to break an event, each invalid by the contract. */
const BREAKAGES: Breakage[] = [
  // times
  { label: "time 9e15", category: "time", apply: (e) => void (e.time = 9e15) },
  { label: "time -1", category: "time", apply: (e) => void (e.time = -1) },
  { label: "time 0", category: "time", apply: (e) => void (e.time = 0) },
  { label: 'time "NaN"', category: "time", apply: (e) => void (e.time = "NaN") },
  { label: "time as a digit string", category: "time", apply: (e, { now }) => void (e.time = String(now - 60_000)) },
  { label: "time 400 days ahead", category: "time", apply: (e, { now }) => void (e.time = now + 400 * DAY) },
  { label: "time 1 hour ahead", category: "time", apply: (e, { now }) => void (e.time = now + 3_600_000) },
  { label: "time 400 days ago", category: "time", apply: (e, { now }) => void (e.time = now - 400 * DAY) },
  { label: "time year 1970+1s", category: "time", apply: (e) => void (e.time = 1000) },
  { label: "time with a fraction", category: "time", apply: (e, { now }) => void (e.time = now - 60_000.5) },
  { label: "time true", category: "time", apply: (e) => void (e.time = true) },
  { label: "time null", category: "time", apply: (e) => void (e.time = null) },
  { label: "time 1e308", category: "time", apply: (e) => void (e.time = 1e308) },
  // wrong types
  { label: 'v "1"', category: "wrong-type", apply: (e) => void (e.v = "1") },
  { label: "v 3 (future version)", category: "wrong-type", apply: (e) => void (e.v = 3) },
  { label: "v null", category: "wrong-type", apply: (e) => void (e.v = null) },
  { label: "id a number", category: "wrong-type", keepsId: false, apply: (e) => void (e.id = 12_345_678) },
  { label: "id too short", category: "wrong-type", keepsId: false, apply: (e) => void (e.id = "short") },
  { label: "id 101 chars", category: "wrong-type", keepsId: false, apply: (e) => void (e.id = "i".repeat(101)) },
  { label: "id null", category: "wrong-type", keepsId: false, apply: (e) => void (e.id = null) },
  { label: "source a string", category: "wrong-type", apply: (e) => void (e.source = "SessionAgent/x") },
  { label: "source an array", category: "wrong-type", apply: (e) => void (e.source = ["SessionAgent", "x"]) },
  { label: "source null", category: "wrong-type", apply: (e) => void (e.source = null) },
  { label: "agentClass empty", category: "wrong-type", apply: (e) => void ((e.source as Identity).agentClass = "") },
  { label: "agentClass 201 chars", category: "wrong-type", apply: (e) => void ((e.source as Identity).agentClass = "C".repeat(201)) },
  { label: "agentName 501 chars", category: "wrong-type", apply: (e) => void ((e.source as Identity).agentName = "n".repeat(501)) },
  { label: "agentClass a number", category: "wrong-type", apply: (e) => void ((e.source as Record<string, unknown>).agentClass = 5) },
  { label: "corr an array", category: "wrong-type", apply: (e) => void (e.corr = []) },
  { label: "corr a string", category: "wrong-type", apply: (e) => void (e.corr = "fiber-1") },
  { label: "corr null", category: "wrong-type", apply: (e) => void (e.corr = null) },
  { label: "corr.fiberId empty", category: "wrong-type", apply: (e) => void ((e.corr as Record<string, unknown>).fiberId = "") },
  { label: "corr.fiberId 201 chars", category: "wrong-type", apply: (e) => void ((e.corr as Record<string, unknown>).fiberId = "f".repeat(201)) },
  { label: "corr.incidentId a number", category: "wrong-type", apply: (e) => void ((e.corr as Record<string, unknown>).incidentId = 42) },
  { label: "corr.traceId not hex", category: "wrong-type", apply: (e) => void ((e.corr as Record<string, unknown>).traceId = "<script>alert(1)</script>") },
  { label: "corr.spanId 15 chars", category: "wrong-type", apply: (e) => void ((e.corr as Record<string, unknown>).spanId = "0".repeat(15)) },
  { label: "corr unknown key", category: "wrong-type", apply: (e) => void ((e.corr as Record<string, unknown>).tenantId = "t-1") },
  { label: "payload null", category: "wrong-type", apply: (e) => void (e.payload = null) },
  { label: "payload an array", category: "wrong-type", apply: (e) => void (e.payload = []) },
  { label: "payload a string", category: "wrong-type", apply: (e) => void (e.payload = "payload") },
  { label: "payload a number", category: "wrong-type", apply: (e) => void (e.payload = 42) },
  { label: "payload.oversized (old sender marker)", category: "wrong-type", apply: (e) => setPayload(e, "oversized", { bytes: 99_999 }) },
  // the per-agent event number: a positive safe integer, or absent
  { label: "seq 0", category: "seq", apply: (e) => void (e.seq = 0) },
  { label: "seq -1", category: "seq", apply: (e) => void (e.seq = -1) },
  { label: "seq 2.5", category: "seq", apply: (e) => void (e.seq = 2.5) },
  { label: "seq as a digit string", category: "seq", apply: (e) => void (e.seq = "12") },
  { label: "seq 2^53", category: "seq", apply: (e) => void (e.seq = 2 ** 53) },
  { label: "seq null", category: "seq", apply: (e) => void (e.seq = null) },
  { label: "seq 1e308", category: "seq", apply: (e) => void (e.seq = 1e308) },
  // unknown event types
  { label: "type fiber.exploded", category: "unknown-type", apply: (e) => void (e.type = "fiber.exploded") },
  { label: "type upper case", category: "unknown-type", apply: (e) => void (e.type = String(e.type).toUpperCase()) },
  { label: "type with a trailing space", category: "unknown-type", apply: (e) => void (e.type = `${String(e.type)} `) },
  { label: "type empty", category: "unknown-type", apply: (e) => void (e.type = "") },
  { label: "type a number", category: "unknown-type", apply: (e) => void (e.type = 42) },
  { label: "type null", category: "unknown-type", apply: (e) => void (e.type = null) },
  { label: "type toString", category: "unknown-type", apply: (e) => void (e.type = "toString") },
  { label: "type __proto__", category: "unknown-type", apply: (e) => void (e.type = "__proto__") },
  { label: "type constructor", category: "unknown-type", apply: (e) => void (e.type = "constructor") },
  { label: "type hasOwnProperty", category: "unknown-type", apply: (e) => void (e.type = "hasOwnProperty") },
  { label: "type markup", category: "unknown-type", apply: (e) => void (e.type = "<script>alert(1)</script>") },
  { label: "type 10k chars", category: "unknown-type", apply: (e) => void (e.type = "t".repeat(10_000)) },
  // missing fields
  ...(["v", "time", "type", "source", "corr", "payload"] as const).map(
    (k): Breakage => ({ label: `missing ${k}`, category: "missing-field", apply: (e) => void delete (e as Record<string, unknown>)[k] }),
  ),
  { label: "missing id", category: "missing-field", keepsId: false, apply: (e) => void delete (e as Record<string, unknown>).id },
  { label: "missing agentName", category: "missing-field", apply: (e) => void delete (e.source as Record<string, unknown>).agentName },
  { label: "a required payload field of the wrong type", category: "wrong-type", apply: (e) => breakPayload(e) },
  // prototype keys where the contract is strict
  {
    label: "corr.__proto__",
    category: "prototype",
    apply: (e) => void Object.defineProperty(e.corr, "__proto__", { value: { polluted: "corr" }, enumerable: true, writable: true, configurable: true }),
  },
  // huge strings: over the 64 KiB event limit
  ...HUGE.map((n): Breakage => ({ label: `${n / 1000} KB error text`, category: "huge", apply: (e) => setPayload(e, "error", "e".repeat(n)) })),
  { label: "110 KB agentName", category: "huge", apply: (e) => void ((e.source as Identity).agentName = "n".repeat(110_000)) },
  { label: "100 KB fiberId", category: "huge", apply: (e) => void ((e.corr as Record<string, unknown>).fiberId = "f".repeat(100_000)) },
  { label: "120 KB markup preview", category: "huge", apply: (e) => setPayload(e, "snapshot", preview("<script>alert(1)</script>".repeat(4800))) },
];

/** Makes a required payload field of the event's type the wrong type (or removes the payload's only requirement). */
function breakPayload(e: Ev): void {
  const t = String(e.type);
  const p = e.payload as Record<string, unknown>;
  if (t.startsWith("fiber.")) p.fiberName = 42;
  else if (t.startsWith("chat.recovery.")) p.attempt = "3";
  else if (t === "chat.context.compacted") p.mode = "lazy";
  else if (t === "chat.transcript.repaired") p.toolCallIds = Array.from({ length: 101 }, (_, i) => `call-${i}`);
  else if (t === "chat.stream.stalled") p.timeoutMs = -5;
  else if (t.startsWith("session.")) p.turnSeq = 1.5;
  else if (t.startsWith("op.")) p.opKind = "";
  else if (t.startsWith("backup.")) p.handle = "";
  else if (t.startsWith("admin.")) p.result = "maybe";
  else if (t === "alarm.memory_limit_reset") p.strikes = -1;
  else if (t === "schedule.executed") p.callback = "";
  else if (t === "sdk.event") p.sdkType = "";
  else if (t === "event.too_large") p.bytes = "big";
  else e.payload = null;
}

/** Changes that keep an event valid (extra keys are stripped, free text is capped at ingest). */
type Twist = { label: string; category: string; apply: (e: Ev, now: number, r: Rng) => void };
const TWISTS: Twist[] = [
  { label: "numbered (seq)", category: "seq", apply: (e, _now, r) => void (e.seq = r.chance(0.1) ? Number.MAX_SAFE_INTEGER : r.int(1, 1_000_000)) },
  { label: "top-level __proto__ key", category: "prototype", apply: (e) => defineOwn(e, "__proto__", { polluted: "top" }) },
  { label: "payload __proto__ key", category: "prototype", apply: (e) => defineOwn(e.payload as object, "__proto__", { polluted: "payload" }) },
  {
    label: "payload constructor.prototype",
    category: "prototype",
    apply: (e) => defineOwn(e.payload as object, "constructor", { prototype: { polluted: "ctor" } }),
  },
  { label: "source __proto__ key", category: "prototype", apply: (e) => defineOwn(e.source as object, "__proto__", { polluted: "source" }) },
  { label: "unknown top-level keys", category: "wrong-type", apply: (e) => Object.assign(e, { extra: "<script>alert(1)</script>", sig: "not-checked" }) },
  {
    label: "60 KB fiber error (under the 64 KiB limit)",
    category: "huge",
    apply: (e) => (String(e.type).startsWith("fiber.") ? setPayload(e, "error", "x".repeat(60_000)) : undefined),
  },
  { label: "time 2 minutes ahead (inside the 300 s skew allowance)", category: "time", apply: (e, now) => void (e.time = now + 120_000) },
  { label: "time 20 days ago", category: "time", apply: (e) => void (e.time = Number(e.time) - 20 * DAY) },
  { label: "lone surrogate in free text", category: "unicode", apply: (e) => appendToText(e, " half \uD800 a pair") },
  { label: "NUL and control characters in free text", category: "control", apply: (e) => appendToText(e, " \u0000\u0001\u001b[2J\u0007") },
  { label: "whitespace around the JSON", category: "whitespace", apply: () => undefined },
];

/** Appends to the payload's free-text fields that are kept (error, detail, reason, fiberName), or adds a note. */
function appendToText(e: Ev, s: string): void {
  const p = e.payload as Record<string, unknown>;
  const keys = ["error", "detail", "reason", "fiberName"].filter((k) => typeof p[k] === "string");
  if (!keys.length) p.note = s;
  for (const k of keys) p[k] = `${String(p[k])}${s}`;
}

function defineOwn(o: object, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The identities hostile-but-valid events report as: markup, lookalike, control characters in class and name. */
export function corpusIdentities(nonce: string): Identity[] {
  return [
    { agentClass: "ProbeAgent", agentName: `fz-${nonce}-plain` },
    { agentClass: "SessionAgent", agentName: `fz-${nonce}-<script>alert(1)</script>` },
    { agentClass: "ProbeAgent", agentName: `fz-${nonce}-"><img src=x onerror=alert(2)>` },
    { agentClass: "Sessi\u043enАgent", agentName: `fz-${nonce}-lookalike-class` },
    { agentClass: "DemoFiberAgent", agentName: `fz-${nonce}-nul\u0000bell\u0007esc\u001b[31m` },
    { agentClass: "'><svg/onload=alert(3)>", agentName: `fz-${nonce}-markup-class` },
    { agentClass: "ProbeAgent", agentName: `fz-${nonce}-\u202Ertl\u200Bzw😀` },
    { agentClass: "ProbeAgent", agentName: `fz-${nonce}-../../etc/passwd%2F?x=<b>#frag` },
  ];
}

/** Agents that claim the victim's ids: another name, another class, and names or classes that only look the same. */
export function forgersOf(v: Victim, nonce: string): Identity[] {
  const { agentClass, agentName } = v.identity;
  return [
    { agentClass, agentName: `fz-${nonce}-forger` },
    { agentClass: "ProbeAgent", agentName },
    { agentClass: "Sessi\u043enАgent", agentName },
    { agentClass, agentName: `${agentName}\u200B` },
    { agentClass, agentName: `${agentName} ` },
    { agentClass: agentClass.toLowerCase(), agentName },
    { agentClass, agentName: agentName.toUpperCase() },
    { agentClass: `${agentClass}\u0000`, agentName },
    { agentClass, agentName: `${agentName}\u0000` },
  ];
}

/** Everything the events fuzz test sends, in a seeded order. */
export function eventCorpus(opts: { seed: number; nonce: string; now: number; victim: Victim }) {
  const { nonce, now, victim } = opts;
  const r = new Rng(opts.seed);
  const types = EVENT_TYPES as readonly string[];
  const identities = corpusIdentities(nonce);
  const messages: Message[] = [];
  let n = 0;
  // Terminated, so that no needle is a prefix of another.
  const needle = () => `fz${nonce}_${n++}_`;
  const time = () => now - r.int(60_000, 2 * DAY);

  /** A valid event of a random (or given) type for `who`; hostile free text and ids when `hostileText`. */
  function valid(who: Identity, opts2: { type?: string; hostileText?: boolean; hostileIds?: boolean } = {}) {
    for (;;) {
      const type = opts2.type ?? r.pick(types);
      const nd = needle();
      const x = textGen(r, opts2.hostileText ? 0.8 : 0);
      const corr = corrOf(type, `fz-${nonce}`, r, who, opts2.hostileIds ?? false);
      const payload = payloadOf(type, x, r, now, corr.sessionName ?? `fz-${nonce}-session`);
      if (!payload) {
        if (opts2.type) throw new Error(`the corpus has no payload for ${opts2.type}; update payloadOf()`);
        continue;
      }
      const id = opts2.hostileIds ? `${nd}-${hostile(r)}`.slice(0, 100) : `${nd}-${r.word(8)}`;
      return { event: envelope(id, time(), type, who, corr, payload), needle: nd, id };
    }
  }

  const bytesOf = (v: unknown) => new TextEncoder().encode(JSON.stringify(v)).byteLength;
  /** What the contract says of an event no breakage touched: stored, unless it is over the size limit. */
  const verdictOf = (e: Ev): "stored" | "dead" => (bytesOf(e) > MAX_EVENT_BYTES ? "dead" : "stored");

  const single = (label: string, category: string, body: unknown, contentType: ContentType, item: Item, direct?: string): Message => ({
    label,
    category,
    body,
    contentType,
    items: [item],
    packed: false,
    ...(direct ? { direct } : {}),
  });
  /** How a single event travels: mostly as JSON text (what agents send), sometimes as a JSON value or a structured clone. */
  const wire = (e: Ev, allowStructured: boolean): { body: unknown; contentType: ContentType } => {
    const roll = r.next();
    if (!allowStructured || roll < 0.65) return { body: JSON.stringify(e), contentType: "text" };
    return roll < 0.85 ? { body: e, contentType: "json" } : { body: e, contentType: "v8" };
  };

  // 1. Every breakage at least twice (different types, identities, wires), plus random extra ones.
  const plan = [...BREAKAGES, ...BREAKAGES, ...Array.from({ length: 120 }, () => r.pick(BREAKAGES))];
  for (const b of plan) {
    const who = r.pick(identities);
    let { event, needle: nd, id } = valid(who, { hostileText: r.chance(0.4), hostileIds: r.chance(0.3) });
    b.apply(event, { now, r });
    if (b.keepsId === false) event = { fz: nd, ...event } as Ev;
    const huge = b.category === "huge";
    // Prototype keys only survive as text (a structured clone would assign them, not define them).
    const w = huge || b.category === "prototype" ? { body: JSON.stringify(event), contentType: "text" as const } : wire(event, true);
    messages.push(
      single(b.label, b.category, w.body, w.contentType, {
        label: b.label,
        category: b.category,
        expect: "dead",
        needle: nd,
        ...(b.keepsId === false ? {} : { eventId: id }),
      }),
    );
  }

  // 2. Oversize bodies (150–200 KB): over the Queue's 128 KB message limit, so they go straight to ingestBatch.
  for (const size of [150_000, 175_000, 200_000]) {
    const { event, needle: nd, id } = valid(r.pick(identities), { type: "fiber.failed" });
    setPayload(event, "error", `${r.pick(MARKUP)}${"E".repeat(size)}`);
    messages.push(
      single(
        `${size / 1000} KB event (over the Queue limit)`,
        "huge",
        JSON.stringify(event),
        "text",
        { label: `${size / 1000} KB event`, category: "huge", expect: "dead", needle: nd, eventId: id },
        "over the Queue's 128 KB message limit",
      ),
    );
  }
  {
    const nd = needle();
    messages.push(
      single(
        "180 KB non-JSON text (over the Queue limit)",
        "huge",
        `${nd} ${"<script>alert(1)</script>".repeat(7200)}`,
        "text",
        { label: "180 KB non-JSON text", category: "huge", expect: "dead", needle: nd },
        "over the Queue's 128 KB message limit",
      ),
    );
  }

  // 3. Hostile but valid: markup, lookalikes and control characters in names, reasons, previews and ids; accepted twists.
  for (let i = 0; i < 190; i++) {
    const who = r.pick(identities);
    const { event, needle: nd, id } = valid(who, { hostileText: true, hostileIds: r.chance(0.5) });
    const twist = r.chance(0.4) ? r.pick(TWISTS) : null;
    twist?.apply(event, now, r);
    const category = twist?.category ?? (i % 3 === 0 ? "unicode" : "markup");
    const label = twist ? `valid + ${twist.label}` : "valid, hostile text and ids";
    const verdict = verdictOf(event);
    const text = twist?.label === "whitespace around the JSON" ? ` \n\t${JSON.stringify(event)}\r\n ` : undefined;
    const w = text !== undefined || twist?.category === "prototype" ? { body: text ?? JSON.stringify(event), contentType: "text" as const } : wire(event, true);
    messages.push(
      single(label, category, w.body, w.contentType, { label, category, expect: verdict, needle: nd, eventId: id, identity: who, ...seqOf(event) }),
    );
  }

  // 4. Deep nesting, 10,000 levels, built iteratively.
  const deepText = (depth: number, inner: string) => `${'{"a":'.repeat(depth)}${inner}${"}".repeat(depth)}`;
  for (let i = 0; i < 3; i++) {
    const { event, needle: nd, id } = valid(r.pick(identities), { type: "admin.force_idle" });
    const text = JSON.stringify(event).replace(/\}\}$/, `,"before":${deepText(10_000, "1")}}}`);
    messages.push(
      single("admin before nested 10,000 deep (text)", "deep", text, "text", {
        label: "10k-deep admin before",
        category: "deep",
        expect: "dead",
        needle: nd,
        eventId: id,
      }),
    );
  }
  {
    const nd = needle();
    messages.push(
      single("a 10,000-deep object as the whole message (text)", "deep", `{"fz":"${nd}","a":${deepText(10_000, '"<script>alert(1)</script>"')}}`, "text", {
        label: "10k-deep message",
        category: "deep",
        expect: "dead",
        needle: nd,
      }),
    );
    // An array message is a packed one: the needle rides as its first item, the 10,000-deep array is the second.
    const nd2 = needle();
    messages.push({
      label: "a 10,000-deep array beside a needle (text)",
      category: "deep",
      contentType: "text",
      packed: true,
      body: `["${nd2}",${"[".repeat(10_000)}"<script>alert(1)</script>"${"]".repeat(10_000)}]`,
      items: [
        { label: "needle item of the deep array message", category: "deep", expect: "dead", needle: nd2 },
        { label: "10k-deep array item", category: "deep", expect: "dead" },
      ],
    });
  }
  {
    // Built iteratively as a structured value: the Queue's serializer overflows on it, so it goes straight to ingest.
    const { event, needle: nd, id } = valid(r.pick(identities), { type: "admin.trigger_alarm" });
    let deep: Record<string, unknown> = { leaf: "<img src=x onerror=alert(2)>" };
    for (let i = 0; i < 10_000; i++) deep = { a: deep };
    setPayload(event, "before", deep);
    messages.push(
      single(
        "admin before nested 10,000 deep (structured)",
        "deep",
        event,
        "v8",
        { label: "10k-deep structured", category: "deep", expect: "dead", needle: nd, eventId: id },
        "the Queue's v8 serializer overflows its stack on 10,000 levels",
      ),
    );
  }

  // 5. Non-JSON text.
  const NON_JSON = (nd: string) => [
    `not json at all ${nd}`,
    `{"id":"${nd}"`,
    `{'id':'${nd}'}`,
    `${nd}\u0000\u0001\u0002`,
    `<script>alert("${nd}")</script>`,
    `<?xml version="1.0"?><event id="${nd}"/>`,
    `\uFEFF{"id":"${nd}"}`,
    `{"id":"${nd}",}`,
    `NaN ${nd}`,
    `undefined ${nd}`,
    `{"id":"${nd}","time":NaN}`,
    `${nd} ${"\uD800"}`,
  ];
  for (let i = 0; i < 12; i++) {
    const nd = needle();
    const text = NON_JSON(nd)[i]!;
    messages.push(
      single(`non-JSON text #${i + 1}`, "non-json", text, "text", { label: `non-JSON text #${i + 1}`, category: "non-json", expect: "dead", needle: nd }),
    );
  }

  // 6. Binary bodies: refused whatever they hold (here: valid events, markup, random bytes).
  const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes.subarray(0, 48)));
  for (let i = 0; i < 8; i++) {
    const nd = needle();
    const { event } = valid(r.pick(identities));
    const head = new TextEncoder().encode(`${nd}|${"_".repeat(48)}`); // 48 bytes from the start are base64-aligned: the needle is their base64
    const tail = i % 2 ? new TextEncoder().encode(JSON.stringify(event)) : Uint8Array.from({ length: r.int(1, 4000) }, () => r.int(0, 255));
    const bytes = new Uint8Array(head.length + tail.length);
    bytes.set(head);
    bytes.set(tail, head.length);
    const body =
      i % 4 === 0
        ? bytes.buffer
        : i % 4 === 1
          ? bytes
          : i % 4 === 2
            ? new DataView(bytes.buffer)
            : new Uint16Array(bytes.buffer.slice(0, bytes.length - (bytes.length % 2)));
    // The Queue's "bytes" type takes views only (a bare ArrayBuffer travels as a structured clone).
    const contentType: ContentType = i % 4 === 1 ? "bytes" : "v8";
    const kind = body.constructor.name;
    messages.push(single(`binary ${kind}`, "binary", body, contentType, { label: `binary ${kind}`, category: "binary", expect: "dead", needle: b64(bytes) }));
  }
  {
    const nd = needle();
    const bytes = new Uint8Array(150_000);
    bytes.set(new TextEncoder().encode(`${nd}|${"_".repeat(48)}`));
    for (let i = 60; i < bytes.length; i++) bytes[i] = r.int(0, 255);
    messages.push(
      single(
        "binary 150 KB (over the Queue limit)",
        "binary",
        bytes,
        "bytes",
        { label: "binary 150 KB", category: "binary", expect: "dead", needle: b64(bytes) },
        "over the Queue's 128 KB message limit",
      ),
    );
  }

  // 7. Structured clones JSON cannot hold.
  const STRUCTURED: [string, (e: Ev) => void][] = [
    ["a Date in the payload", (e) => setPayload(e, "at", new Date(now))],
    ["a Map in the payload", (e) => setPayload(e, "m", new Map([["<script>", "alert(1)"]]))],
    ["a Set in corr", (e) => defineOwn(e.corr as object, "set", new Set([1]))],
    ["a BigInt in the payload", (e) => setPayload(e, "n", 10n)],
    ["time NaN (structured)", (e) => void (e.time = Number.NaN)],
    ["time Infinity (structured)", (e) => void (e.time = Number.POSITIVE_INFINITY)],
    ["bytes inside the payload", (e) => setPayload(e, "raw", new Uint8Array([60, 115, 99, 114]))],
    ["a RegExp as the payload", (e) => void (e.payload = /<script>/)],
    ["an Error as the payload", (e) => void (e.payload = new Error("<img src=x onerror=alert(2)>"))],
  ];
  for (const [label, apply] of STRUCTURED) {
    const { event, needle: nd, id } = valid(r.pick(identities));
    apply(event);
    messages.push(
      single(`structured: ${label}`, "structured", event, "v8", {
        label: `structured: ${label}`,
        category: "structured",
        expect: "dead",
        needle: nd,
        eventId: id,
      }),
    );
  }

  // 8. Markerless whole messages: nothing to tag them with, so their dead letters are counted by exact body.
  for (const [label, body, contentType, text] of [
    ["empty packed array", "[]", "text", "[]"],
    ["JSON null", "null", "text", "null"],
    ["JSON number", "42", "text", "42"],
    ["JSON true", "true", "text", "true"],
    ["JSON string", '"<script>alert(1)</script>"', "text", '"<script>alert(1)</script>"'],
    ["empty object", "{}", "text", "{}"],
    ["empty text", "", "text", ""],
  ] as const) {
    messages.push({
      label,
      category: "markerless",
      body,
      contentType,
      items: [{ label, category: "markerless", expect: "dead" }],
      packed: false,
      markerless: text,
    });
  }

  // 9. Packed arrays mixing good and bad items (the agents' normal message is a packed array of events).
  for (let p = 0; p < 16; p++) {
    const items: Item[] = [];
    const elements: unknown[] = [];
    const count = r.int(4, 12);
    for (let i = 0; i < count; i++) {
      const roll = r.next();
      const who = r.pick(identities);
      if (roll < 0.45) {
        const { event, needle: nd, id } = valid(who, { hostileText: r.chance(0.5), hostileIds: r.chance(0.3) });
        // As agents send them: most packed events are numbered.
        if (r.chance(0.6)) event.seq = r.int(1, 1_000_000);
        elements.push(event);
        items.push({ label: "packed valid", category: "packed", expect: verdictOf(event), needle: nd, eventId: id, identity: who, ...seqOf(event) });
      } else if (roll < 0.8) {
        const b = r.pick(BREAKAGES.filter((x) => x.category !== "huge" && x.category !== "prototype"));
        let { event, needle: nd, id } = valid(who, { hostileText: true });
        b.apply(event, { now, r });
        if (b.keepsId === false) event = { fz: nd, ...event } as Ev;
        elements.push(event);
        items.push({ label: `packed: ${b.label}`, category: "packed", expect: "dead", needle: nd, ...(b.keepsId === false ? {} : { eventId: id }) });
      } else {
        const odd = r.pick([null, 42, "just a string", [], {}, [{ nested: "array" }], true]);
        elements.push(odd);
        items.push({ label: `packed: ${JSON.stringify(odd)}`, category: "packed", expect: "dead" });
      }
    }
    // Every packed message carries at least one dead item with a needle: it names the message in dead_letters.
    const nd = needle();
    elements.push({ fz: nd, type: "fiber.exploded" });
    items.push({ label: "packed: unknown type (anchor)", category: "packed", expect: "dead", needle: nd });
    if (p % 4 === 0) {
      // The same valid event twice in one message, and a 10,000-deep item beside it.
      const { event, needle: vn, id } = valid(r.pick(identities));
      elements.push(event, structuredClone(event));
      items.push({ label: "packed duplicate (first)", category: "packed", expect: "stored", needle: vn, eventId: id, identity: event.source as Identity });
      items.push({ label: "packed duplicate (second)", category: "packed", expect: "duplicate", eventId: id, owner: event.source as Identity });
      // Spliced in as text below: serialising 10,000 levels is what a recursive serialiser must not be asked to do.
      const dn = needle();
      elements.push(`__deep_${dn}`);
      items.push({ label: "packed 10k-deep item", category: "deep", expect: "dead", needle: dn });
    }
    const order = r.shuffle(elements.map((_e, i) => i));
    const body = JSON.stringify(order.map((i) => elements[i])).replace(
      /"__deep_(fz[^"]+)"/,
      (_m, dn: string) => `{"fz":"${dn}","deep":${deepText(10_000, "1")}}`,
    );
    // Keep the message under the Queue limit by construction: packed items are small.
    messages.push({
      label: `packed array of ${elements.length}`,
      category: "packed",
      body,
      contentType: "text",
      items: order.map((i) => items[i]!),
      packed: true,
    });
  }

  // 10. Forged identities: other agents claiming the victim's session, fiber, incidents, op and backup.
  const forgers = forgersOf(victim, nonce);
  const vEvents = victimEvents(victim, now);
  forgers.forEach((f, fi) => {
    const later = (k: number) => now - 600_000 + fi * 10_000 + k * 1000;
    const s = { sessionName: victim.session };
    const base = { maxAttempts: 9, recoveryKind: "continue" };
    const forged: Ev[] = [
      envelope(
        `${needle()}-forged`,
        later(1),
        "session.error",
        f,
        { ...s, incidentId: victim.turn },
        { turnSeq: 99, error: `forged ${MARKUP[0]}`, reason: "forged" },
      ),
      envelope(`${needle()}-forged`, later(2), "session.status_terminated", f, s, { turnSeq: 100 }),
      envelope(`${needle()}-forged`, later(3), "fiber.failed", f, { fiberId: victim.fiberId }, { fiberName: "zzz", error: "forged" }),
      envelope(`${needle()}-forged`, later(4), "fiber.stashed", f, { fiberId: victim.fiberId }, { fiberName: "zzz", snapshot: preview('{"forged":true}') }),
      envelope(
        `${needle()}-forged`,
        later(5),
        "chat.recovery.exhausted",
        f,
        { incidentId: victim.chat, requestId: "req-1" },
        { ...base, attempt: 9, reason: "forged" },
      ),
      envelope(`${needle()}-forged`, later(6), "session.status_idle", f, { ...s, incidentId: victim.turn }, { turnSeq: 1 }),
      envelope(`${needle()}-forged`, later(7), "op.resolved", f, { ...s, opId: victim.opId }, { opKind: "zzz", resolution: "verified_not_ran" }),
      envelope(`${needle()}-forged`, later(8), "backup.expired", f, s, {
        handle: victim.handle,
        tenant: "zzz",
        environment: "zzz",
        sessionName: victim.session,
      }),
      envelope(
        `${needle()}-forged`,
        later(9),
        "fiber.recovery.handled",
        f,
        { fiberId: victim.fiberId, incidentId: `fiber:${victim.identity.agentClass}/${victim.identity.agentName}/${victim.fiberId}` },
        { fiberName: "zzz" },
      ),
    ];
    // Forgers number their events too (claiming numbers the victim used): only their own rows count them.
    forged.forEach((e, i) => void (e.seq = i + 1));
    const items: Item[] = forged.map((e) => ({
      label: `forged ${String(e.type)} by ${JSON.stringify(f)}`,
      category: "forged",
      expect: "stored",
      needle: String(e.id).replace(/-forged$/, ""),
      eventId: String(e.id),
      identity: f,
      ...seqOf(e),
    }));
    // Some forgers also reuse the victim's own event ids (a different event under a stored id): stored as the
    // forger's own event, the victim's row unchanged (the victim's rows are checked apart).
    const elements: unknown[] = [...forged];
    if (fi % 3 === 0) {
      for (const v of vEvents.slice(0, 3)) {
        const reuse = { ...v, source: { ...f }, time: later(10), payload: v.payload };
        elements.push(reuse);
        items.push({
          label: `forged reuse of the victim's event id ${String(v.id)}`,
          category: "forged",
          expect: "stored",
          eventId: String(v.id),
          identity: f,
          ...seqOf(reuse as Ev),
        });
      }
      const nd = needle();
      elements.push({ fz: nd, type: "session.status_confused" });
      items.push({ label: "forged batch anchor", category: "forged", expect: "dead", needle: nd });
    }
    if (r.chance(0.5)) {
      messages.push({
        label: `forged by ${JSON.stringify(f)} (packed)`,
        category: "forged",
        body: JSON.stringify(elements),
        contentType: "text",
        items,
        packed: true,
      });
    } else {
      // One message per event; duplicates (which leave no trace) still travel packed beside their anchor.
      forged.forEach((e, i) => {
        messages.push(single(items[i]!.label, "forged", JSON.stringify(e), "text", items[i]!));
      });
      if (elements.length > forged.length) {
        messages.push({
          label: `forged id reuse by ${JSON.stringify(f)} (packed)`,
          category: "forged",
          body: JSON.stringify(elements.slice(forged.length)),
          contentType: "text",
          items: items.slice(forged.length),
          packed: true,
        });
      }
    }
  });

  return { messages: r.shuffle(messages), identities, forgers };
}

// ----- HTTP answers -----

/** Why a 4xx body is not something a person can read, or null when it is. */
export function unreadable(status: number, contentType: string, body: string): string | null {
  const text = contentType.includes("json") ? jsonMessage(body) : contentType.includes("html") ? visibleText(body) : body;
  if (text === null) return "JSON without an error message";
  const t = text.trim();
  if (!t) return "empty body";
  if (!/[A-Za-z]{3,}[^A-Za-z]+[A-Za-z]{2,}/.test(t)) return `no words in ${JSON.stringify(t.slice(0, 80))}`;
  if (/\bat \S+ \(\S+:\d+:\d+\)|ZodError|D1_ERROR|SQLITE_|\[object Object\]/.test(t)) return `internals in ${JSON.stringify(t.slice(0, 200))}`;
  if (status >= 400 && /^(ok|true|null|\{\}|\[\])$/i.test(t)) return `not an explanation: ${t}`;
  return null;
}

function jsonMessage(body: string): string | null {
  try {
    const v = JSON.parse(body) as { error?: unknown; message?: unknown };
    const e = v.error;
    if (typeof e === "string") return `${e} ${typeof v.message === "string" ? v.message : ""}`;
    if (e && typeof e === "object" && typeof (e as { message?: unknown }).message === "string") return (e as { message: string }).message;
    if (typeof v.message === "string") return v.message;
    return null;
  } catch {
    return null;
  }
}

/** The text of an HTML page's <main> (or body) with tags removed. */
function visibleText(html: string): string {
  const main = /<main\b[^>]*>([\s\S]*?)<\/main>/i.exec(html)?.[1] ?? /<body\b[^>]*>([\s\S]*?)<\/body>/i.exec(html)?.[1] ?? html;
  return main.replace(/<[^>]*>/g, " ").replace(/\s+/g, " ");
}

/** The hostile markup an HTML body carries unescaped (empty when none). */
export function rawMarkupIn(html: string): string[] {
  return RAW_MARKUP.filter((re) => re.test(html)).map((re) => re.source);
}

/** A compact, grouped form of a dead-letter reason: numbers, quoted values, dates and paths collapsed. */
export function reasonClass(reason: string): string {
  return reason
    .replace(/"(?:[^"\\]|\\.)*"/g, '"…"')
    .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<date>")
    .replace(/\(at [^)]*\)/g, "(at …)")
    .replace(/at (payload|corr|source)[\w.[\]"…]*/g, "at $1…")
    .replace(/\b(payload|corr|source)\.[\w.[\]]+/g, "$1.…")
    .replace(/[\d,]*\d/g, "N")
    .replace(/\s+/g, " ")
    .slice(0, 110);
}

/** Prints a table of counts for console.log. */
export function table(title: string, rows: [string, number | string][]): string {
  const w = Math.max(...rows.map(([k]) => k.length), title.length);
  return [title, "-".repeat(w + 10), ...rows.map(([k, v]) => `${k.padEnd(w)}  ${String(v).padStart(7)}`)].join("\n");
}

// ----- calling the Worker -----

/**
 * The test entry's Worker (worker/index.ts, tracing wrapper included), called with the test env minus its OTLP
 * endpoint. With the endpoint, every fuzzed request exported its spans over a connection of its own in the
 * background: thousands were in flight at once (up to 6,000 open descriptors in workerd), workerd logged "Too many
 * open files" and a loaded machine ran the tests into their timeouts. Exporting is test/telemetry/otlp-export.test.ts's
 * subject; here each request is traced and its spans dropped, and its background work is awaited before the next.
 * Called directly, a redirect is answered as a browser gets it (3xx), not followed as `exports.default.fetch` does.
 */
const fuzzEnv = { ...env, OTLP_ENDPOINT: undefined } as unknown as typeof env;
async function callWorker(request: Request): Promise<{ res: Response; text: string }> {
  const ctx = createExecutionContext();
  try {
    const res = await worker.fetch!(request as Parameters<NonNullable<typeof worker.fetch>>[0], fuzzEnv, ctx);
    return { res, text: await res.text() };
  } finally {
    await waitOnExecutionContext(ctx);
  }
}

export type Answer = { method: string; path: string; who: Who; status: number; type: string; text: string; nosniff: boolean };
export type Finding = { request: string; status: number; detail: string };

/**
 * Calls the real Worker (the test entry's default export) and records, instead of failing at the first
 * one, every answer that breaks a rule: 5xx, hostile markup unescaped in HTML, a 4xx nobody can read.
 */
export class Recorder {
  tried = 0;
  readonly byClass: Record<string, number> = {};
  readonly serverErrors: Finding[] = [];
  readonly reflected: Finding[] = [];
  readonly unreadable: Finding[] = [];
  /** Non-HTML answers (JSON, plain text) that carry hostile markup as data; only safe as long as no browser renders them. */
  readonly markupAsData: Finding[] = [];

  async call(path: string, who: Who, init: { method?: string; headers?: Record<string, string>; body?: BodyInit } = {}): Promise<Answer> {
    const method = init.method ?? "GET";
    const headers = new Headers(init.headers);
    if (who !== "anonymous") headers.set("Cf-Access-Jwt-Assertion", await accessToken(USERS[who]));
    const request = `${method} ${path.length > 160 ? `${path.slice(0, 160)}…(${path.length} chars)` : path} as ${who}${init.headers?.Accept ? ` [${init.headers.Accept}]` : ""}${init.headers?.["HX-Request"] ? " [htmx]" : ""}`;
    this.tried++;
    let res: Response;
    let text: string;
    try {
      ({ res, text } = await callWorker(new Request(`${ORIGIN}${path}`, { method, headers, body: init.body })));
    } catch (e) {
      // The Worker threw instead of answering: the platform would answer 500.
      this.serverErrors.push({ request, status: 500, detail: `threw: ${e instanceof Error ? e.message : String(e)}` });
      this.byClass["5xx"] = (this.byClass["5xx"] ?? 0) + 1;
      return { method, path, who, status: 500, type: "", text: "", nosniff: false };
    }
    const type = res.headers.get("content-type") ?? "";
    const answer = { method, path, who, status: res.status, type, text, nosniff: res.headers.get("x-content-type-options") === "nosniff" };
    const klass = `${Math.floor(res.status / 100)}xx`;
    this.byClass[klass] = (this.byClass[klass] ?? 0) + 1;
    const excerpt = text.replace(/\s+/g, " ").slice(0, 300);
    if (res.status >= 500) this.serverErrors.push({ request, status: res.status, detail: excerpt });
    const markup = rawMarkupIn(text);
    if (markup.length) {
      const asHtml = /html/i.test(type) || !answer.nosniff || !type;
      (asHtml ? this.reflected : this.markupAsData).push({
        request,
        status: res.status,
        detail: `${type || "no content type"}: ${markup.join(", ")} in ${excerpt}`,
      });
    }
    if (res.status >= 400 && res.status < 500) {
      const why = unreadable(res.status, type, text);
      if (why) this.unreadable.push({ request, status: res.status, detail: why });
    }
    return answer;
  }

  /** Runs `calls` with a few in flight at once (the Worker is real; so is its D1). */
  async all(calls: (() => Promise<unknown>)[], parallel = 6): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (next < calls.length) await calls[next++]!();
      }),
    );
  }

  summary(title: string): string {
    return table(title, [
      ["requests tried", this.tried],
      ...Object.entries(this.byClass)
        .sort()
        .map(([k, v]): [string, number] => [`answered ${k}`, v]),
      ["5xx seen", this.serverErrors.length],
      ["hostile markup unescaped in HTML", this.reflected.length],
      ["hostile markup as JSON/text data (nosniff, not HTML)", this.markupAsData.length],
      ["4xx without a readable message", this.unreadable.length],
    ]);
  }
}

/** The console's routes, from the app itself: a route added later is fuzzed without being listed. */
export function registeredRoutes(routes: readonly { method: string; path: string }[]): { method: string; pattern: string; params: string[] }[] {
  const keys = [...new Set(routes.filter((r) => r.method !== "ALL").map((r) => `${r.method} ${r.path}`))].sort();
  return keys.map((k) => {
    const [method, pattern] = k.split(" ") as [string, string];
    return { method, pattern, params: [...pattern.matchAll(/:(\w+)/g)].map((m) => m[1]!) };
  });
}

/**
 * Waits until the console's trace exports (one per invocation through the runtime: queue batches, requests made
 * outside the Recorder) stop arriving at the test's OTLP receiver, so
 * that none is still in flight when the test worker shuts down (workerd then logs each cancelled fetch).
 */
export async function drainTraceExports(controlUrl: string, timeout = 15_000): Promise<void> {
  const deadline = Date.now() + timeout;
  let last = -1;
  let stable = 0;
  while (Date.now() < deadline && stable < 4) {
    const { received } = (await (await fetch(`${controlUrl}/__stats`)).json()) as { received: number };
    stable = received === last ? stable + 1 : 0;
    last = received;
    await scheduler.wait(250);
  }
}
