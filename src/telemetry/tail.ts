import { AGENT_CHANNEL, AGENT_MESSAGE_VERSION, PARENT_MESSAGE_TYPE } from "@agent-oncall/admin-rpc/facts";
import { z } from "zod";
import { OUTBOX_SHIPPED_MARK, SCHEMA_VERSION, TRUNCATED_REASON, UNREADABLE_PREFIX } from "./constants.js";
import { describeIssues, parseEvent, type TelemetryEvent } from "./envelope.js";
import { type NormalizeOptions, normalizeSdkEvent } from "./normalize.js";
import type { QueueLike } from "./outbox.js";
import { sendPacked } from "./pack.js";
import { type Masker, maskJson, maskSecrets } from "./redact.js";
import { signEventText } from "./signing.js";
import { type AgentPathStep, agentKeyName, MAX_PARENT_DEPTH, readParentPath } from "./sub-agents.js";
import { TailChatTurns, tailChatTurns } from "./tail-chat-turns.js";

/** The chat-turn fold, for a caller (a test) that keeps its own memory instead of the isolate one. */
export { TailChatTurns };

/**
 * Capture without code in the agent: the Workers runtime forwards every message published on a
 * `node:diagnostics_channel` channel to the Worker's Tail Workers, as `diagnosticsChannelEvents` of a trace item.
 * The agents SDK (0.32) publishes each observability event, whole (`{ type, agent, name, payload, timestamp }`), on
 * one of its `agents:*` channels (its `observability/diagnostics`). This module turns trace items into the event
 * contract, and says what it could not take.
 *
 * The agent publishes what the SDK does not on its own channel (AGENT_CHANNEL, the admin package's publishing
 * helper): events of the contract (force idle's report, stash snapshots, paid ops, session turns, model usage) and,
 * for a sub-agent, its ancestry before its SDK messages. Each is validated here with zod; one that does not fit is
 * a loss with its reason.
 *
 * Privacy: a trace item also carries the Worker's logs, exceptions and request metadata. Only the diagnostics
 * messages of the channels named here are read; the rest of the item is never looked at.
 */

/** The prefix of every channel the agents SDK publishes on (agents 0.32: `agents:fiber`, `agents:task`, …). */
export const SDK_CHANNEL_PREFIX = "agents:";
/**
 * The channel the runtime files its notice under when an invocation's diagnostics passed its size limit
 * (about 256 KiB on the classic tail, measured with workerd 1.20261117): its `message` is undefined and the
 * invocation's later messages are dropped.
 */
export const LIMIT_EXCEEDED_CHANNEL = "workerd.LimitExceeded";

/** The part of a Workers trace item this module reads (structurally a `TraceItem`). */
export type TailItem = {
  readonly diagnosticsChannelEvents?: readonly { readonly timestamp: number; readonly channel: string; readonly message: unknown }[];
  readonly scriptName: string | null;
  readonly durableObjectId?: string;
  readonly eventTimestamp: number | null;
  readonly truncated: boolean;
  readonly entrypoint?: string;
  /**
   * What started the invocation. Only `scheduledTime` is read, and only to tell an alarm invocation (an alarm has a
   * `scheduledTime` and no `cron`); nothing else of it is looked at.
   */
  readonly event?: unknown;
  /**
   * Set by a streaming tail (worker/tail-stream.ts), which hands one invocation over in several flushes: what the
   * earlier flushes of the same invocation read, and whether this is its last. Absent on a classic trace item,
   * which is an invocation whole.
   */
  readonly stream?: { readonly memory: InvocationMemory; readonly final: boolean };
};

/**
 * What one invocation's messages carry from one to the next: the agent they named, the recovery hooks and
 * ancestries open, and how many entries came before (a message's place in its invocation is part of its id). A
 * classic item is read with a fresh one; a streaming tail keeps one per invocation across its flushes, so the same
 * messages get the same ids and the same reading either way.
 */
export type InvocationMemory = {
  /** Entries of the invocation already read: the next entry's position. */
  offset: number;
  agent: { agent: string; name: string } | null;
  /** Whether the runtime's limit notice was seen. */
  cut: boolean;
  sdkMessages: number;
  hooks: Hooks;
  ancestry: Map<string, AgentPathStep[]>;
};

/** A fresh memory, for an invocation's first entries. */
export function invocationMemory(): InvocationMemory {
  return { offset: 0, agent: null, cut: false, sdkMessages: 0, hooks: new Map(), ancestry: new Map() };
}

/** What a trace item says was lost, or a message that could not be read: each becomes a dead letter with its reason. */
export type TailLoss = {
  /** Stable per item and position, so a redelivered item records its loss once. */
  key: string;
  reason: string;
  /** What is known of where it came from, and the message as it arrived (when there was one). */
  body: string;
};

/** A Durable Object that published SDK events, and the agent its messages named (the item never names it). */
export type TailObject = { worker: string; objectId: string; agentClass: string; agentName: string };

/**
 * An alarm invocation of a Durable Object in which the SDK published nothing. The agents SDK (0.32) publishes
 * nothing for a `keepAlive()` heartbeat (its docs: "without creating schedule rows or emitting observability
 * events"), which runs as exactly such an alarm; the SDK's own housekeeping alarms (fiber recovery backoff) are
 * the other kind. So this is a fact (woken by its alarm, nothing reported), never a claim that it was keepAlive.
 */
export type SilentWake = { worker: string; objectId: string; agentClass: string | null; at: number };

export type TailCapture = {
  events: TelemetryEvent[];
  /** Objects whose messages named their agent, once per object and name. */
  objects: TailObject[];
  /** Alarm invocations with no SDK message (see SilentWake). */
  silentWakes: SilentWake[];
  losses: TailLoss[];
  /** Diagnostics messages read from the SDK's channels (each item's, before noise was set aside). */
  read: number;
  /** Of those, the SDK's per-call noise that is not kept (NOISY_SDK_TYPES). */
  noise: number;
  /** Of those, events of agents whose telemetry mixin ships them through its outbox: skipped, not sent twice. */
  viaOutbox: number;
};

/**
 * 64 bits of FNV-1a over a string, as 16 hex characters: two 32-bit passes with different offsets. Not a
 * cryptographic hash: it only has to make ids of different messages differ.
 */
export function fnv64(s: string): string {
  let a = 0x811c9dc5;
  let b = 0xcbf29ce4;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  return (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");
}

/**
 * A captured event's id, the same however often its item is delivered. SDK messages carry no id, and the
 * Workers clock stands still during an invocation, so time and content alone can collide (two identical events
 * in one invocation): the id also takes the item (Worker, Durable Object, invocation start) and the message's
 * place in it. It sorts by time, then by place, like the outbox's ids (ids.ts).
 */
export function tailEventId(item: TailItem, index: number, time: number, messageText: string): string {
  const where = `${item.scriptName ?? ""}\0${item.durableObjectId ?? ""}\0${item.eventTimestamp ?? ""}\0${item.entrypoint ?? ""}`;
  return `${time.toString(36).padStart(9, "0")}-${index.toString(36).padStart(6, "0")}-t${fnv64(`${where}\0${messageText}`)}`;
}

/** The time an alarm invocation was scheduled for, or null when the item is not an alarm's (cron has a `cron`). */
export function alarmScheduledTime(item: TailItem): number | null {
  const e = item.event;
  if (!e || typeof e !== "object" || "cron" in e) return null;
  const t = (e as { scheduledTime?: unknown }).scheduledTime;
  const ms = t instanceof Date ? t.getTime() : typeof t === "number" ? t : typeof t === "string" ? Date.parse(t) : Number.NaN;
  return Number.isFinite(ms) && ms > 0 ? ms : null;
}

/** JSON of a value, or null when it has none (cycles, BigInt). */
function json(v: unknown): string | null {
  try {
    return JSON.stringify(v) ?? null;
  } catch {
    return null;
  }
}

/** Where an item came from, in words, for a loss's body. */
function origin(item: TailItem, agent: { agent: string; name: string } | null): Record<string, unknown> {
  return {
    worker: item.scriptName ?? "(not named: local dev)",
    durableObjectId: item.durableObjectId ?? null,
    invocationStart: item.eventTimestamp,
    agentClass: agent?.agent ?? null,
    agentName: agent?.name ?? null,
  };
}

/**
 * The contract's event types an agent may publish on AGENT_CHANNEL: the facts only the agent knows. Not the SDK's
 * (its own channels carry those) and not the console's own (admin, reconciliation), which no agent may claim.
 */
export const AGENT_PUBLISHED_TYPES: ReadonlySet<string> = new Set([
  "fiber.stashed",
  "fiber.resolved",
  "session.status_running",
  "session.status_idle",
  "session.status_rescheduled",
  "session.status_terminated",
  "session.error",
  "op.started",
  "op.completed",
  "op.ambiguous",
  "op.resolved",
  "model.usage",
  // A recovery the operator's pause held back (a managed fiber) or declined (a chat turn): the admin mixin reports it.
  "recovery.skipped_paused",
  "backup.created",
  "backup.restored",
  "backup.expired",
]);

const className = z.string().regex(/^[A-Za-z_$][\w$]{0,199}$/, "a class name");
/** A message on AGENT_CHANNEL (facts.ts AgentMessage); its payload and corr are checked by the event contract after. */
const agentMessage = z.object({
  v: z.literal(AGENT_MESSAGE_VERSION),
  type: z.string().min(1).max(100),
  agent: className,
  name: z.string().min(1).max(200),
  parentPath: z
    .array(z.object({ className, name: z.string().min(1).max(200) }))
    .min(1)
    .max(MAX_PARENT_DEPTH)
    .optional(),
  payload: z.record(z.string(), z.unknown()),
  corr: z.record(z.string(), z.string()).optional(),
  timestamp: z.number().positive(),
});

type SdkMessage = { type: string; agent?: string; name?: string; payload?: Record<string, unknown>; timestamp?: number };

/** Whether a message has the shape the SDK publishes: an object with a type, and a payload object if any. */
function isSdkMessage(m: unknown): m is SdkMessage {
  if (!m || typeof m !== "object" || Array.isArray(m)) return false;
  const o = m as Record<string, unknown>;
  if (typeof o.type !== "string" || !o.type) return false;
  if (o.payload !== undefined && (typeof o.payload !== "object" || o.payload === null || Array.isArray(o.payload))) return false;
  return (o.agent === undefined || typeof o.agent === "string") && (o.name === undefined || typeof o.name === "string");
}

/**
 * The parent the console found for a sub-agent whose Worker publishes no ancestry, by the facet's Durable Object id
 * (src/admin-rpc/facet-ids.ts): undefined when it found none or the object is a top-level agent.
 */
export type FacetParents = (worker: string, objectId: string, agentClass: string, agentName: string) => AgentPathStep[] | undefined;

/**
 * The class key of an agent the console cannot act on (workers.ts: `ChatAgent@other-worker`), for the object that
 * published it: undefined when the object is the bound Worker's agent, a sub-agent of a known parent, or one the
 * console cannot tell (worker/ingest/facet-parents.ts decides, from the console's own bindings).
 */
export type ClassKeys = (worker: string, objectId: string, agentClass: string, agentName: string) => string | undefined;

/** Recovery hooks running in an item, by the fiber they recover: the runs that started while each ran. */
export type Hooks = Map<string, { name: string; at: number | null; started: { fiberId: string; fiberName: string }[] }>;

/**
 * Follows recovery hooks through an item's messages, in publish order: the SDK publishes `fiber:recovery:attempt`
 * before it calls `onFiberRecovered` and `fiber:recovery:handled` after the hook returned, and `runFiber` publishes
 * `fiber:run:started` as it is called, so a run the hook started sits between the two, in the same invocation.
 */
function watchHooks(hooks: Hooks, m: SdkMessage): void {
  const p = m.payload ?? {};
  const fiberId = typeof p.fiberId === "string" ? p.fiberId : null;
  if (!fiberId) return;
  const fiberName = typeof p.fiberName === "string" ? p.fiberName : "";
  const at = typeof m.timestamp === "number" && Number.isFinite(m.timestamp) && m.timestamp > 0 ? Math.round(m.timestamp) : null;
  if (m.type === "fiber:recovery:attempt") hooks.set(fiberId, { name: fiberName, at, started: [] });
  else if (m.type === "fiber:run:started") for (const h of hooks.values()) h.started.push({ fiberId, fiberName });
}

/**
 * What a plain runFiber's recovery hook did, from the SDK's messages alone: "resumed" (with the new run) when a run
 * of the same name started while it ran, else "unknown": dropped work and work resumed some other way (a schedule,
 * a later call, another name) publish the same thing, so the console must not call either "recovered". Nothing for
 * a managed fiber (the SDK records its outcome in its ledger) or the SDK's internal fibers (status "internal").
 */
function hookOutcome(hooks: Hooks, m: SdkMessage): { hook?: "resumed" | "unknown"; resumedAs?: string; hookStartedAt?: number } {
  const p = m.payload ?? {};
  const fiberId = typeof p.fiberId === "string" ? p.fiberId : "";
  const h = hooks.get(fiberId);
  hooks.delete(fiberId);
  // When the hook was called, for any fiber: a managed fiber's settlement by its hook is dated from then (run-rows.ts).
  const started = h?.at != null ? { hookStartedAt: h.at } : {};
  if (p.status !== "user") return started;
  const again = h?.started.find((r) => r.fiberName === h.name && r.fiberId !== fiberId);
  return again ? { hook: "resumed", resumedAs: again.fiberId.slice(0, 200), ...started } : { hook: "unknown", ...started };
}

/**
 * What the SDK records of a managed fiber whose recovery failed (its hook threw or timed out), from the message
 * alone: agents 0.32 sets the interrupted fiber `error`, with the very message it publishes, in the same step
 * (`_recordFiberRecoveryFailure`). The outbox path reads the same with `inspectFiber` (sdk-reads.ts). Nothing for a
 * plain runFiber, whose recovery failure is its own outcome.
 */
function recoveryFailureRecord(m: SdkMessage): { fiberStatus?: string; fiberError?: string } {
  const p = m.payload ?? {};
  if (p.managed !== true) return {};
  return { fiberStatus: "error", ...(typeof p.error === "string" && p.error ? { fiberError: p.error } : {}) };
}

/**
 * Turns trace items into contract events. Never throws: a message it cannot read, an item the runtime cut
 * short, and the runtime's limit notice each become a loss with a reason, never a lost item.
 */
export function captureFromTail(
  items: readonly TailItem[],
  opts: { mask?: Masker; normalize?: NormalizeOptions; turns?: TailChatTurns; parents?: FacetParents; classKeys?: ClassKeys } = {},
): TailCapture {
  const out: TailCapture = { events: [], objects: [], silentWakes: [], losses: [], read: 0, noise: 0, viaOutbox: 0 };
  const named = new Set<string>();
  const mask = opts.mask ?? maskSecrets;
  // Chat turns under recovery span items: their memory outlives one call (tail-chat-turns.ts).
  const turns = opts.turns ?? tailChatTurns;
  for (const item of items) {
    const entries = Array.isArray(item.diagnosticsChannelEvents) ? item.diagnosticsChannelEvents : [];
    // The invocation's memory: fresh for a classic item, carried across a streaming tail's flushes.
    const mem = item.stream?.memory ?? invocationMemory();
    const base = mem.offset;
    mem.offset += entries.length;
    // Whether this is the invocation's last word: only then can it say "nothing was published" or "cut short".
    const whole = !item.stream || item.stream.final;
    const { hooks, ancestry } = mem;
    entries.forEach((entry, at) => {
      // The entry's place in its invocation, however many flushes came before it.
      const index = base + at;
      const channel = typeof entry?.channel === "string" ? entry.channel : "";
      if (channel === LIMIT_EXCEEDED_CHANNEL) {
        mem.cut = true;
        return;
      }
      if (channel === AGENT_CHANNEL) {
        out.read++;
        const r = fromAgentChannel(item, index, entry.timestamp, entry.message, mask, opts.classKeys);
        if ("loss" in r) out.losses.push(r.loss);
        else if ("parent" in r) ancestry.set(`${r.parent.agent}\0${r.parent.name}`, r.parent.parentPath);
        else out.events.push(r.event);
        return;
      }
      if (!channel.startsWith(SDK_CHANNEL_PREFIX)) return; // not the SDK's: left unread
      out.read++;
      mem.sdkMessages++;
      const m = entry.message;
      const text = json(m);
      if (!isSdkMessage(m) || text === null) {
        out.losses.push({
          key: `tail:${fnv64(`${json(origin(item, null))}\0${index}\0${text ?? String(m)}`)}`,
          reason: `${UNREADABLE_PREFIX}diagnostics message on ${channel.slice(0, 100)}: not an agents-SDK event (${m === undefined ? "no message" : text === null ? "not serialisable" : "no type, or a payload that is not an object"})`,
          body: JSON.stringify({ ...origin(item, mem.agent), channel, position: index, message: text?.slice(0, 2000) ?? null }),
        });
        return;
      }
      if (m.agent && m.name) mem.agent = { agent: m.agent, name: m.name };
      watchHooks(hooks, m);
      if ((m as Record<string, unknown>)[OUTBOX_SHIPPED_MARK] === true) {
        out.viaOutbox++;
        return;
      }
      const time = typeof m.timestamp === "number" && Number.isFinite(m.timestamp) && m.timestamp > 0 ? Math.round(m.timestamp) : entry.timestamp;
      // A sub-agent's SDK message is keyed by the ancestry it announced before it (sub-agents.ts keeps the key).
      // Else by the parent the console matched to the facet's object id (worker/ingest/facet-parents.ts), if any.
      const parentPath =
        m.agent && m.name
          ? (ancestry.get(`${m.agent}\0${m.name}`) ??
            (item.durableObjectId ? opts.parents?.(item.scriptName ?? "", item.durableObjectId, m.agent, m.name) : undefined))
          : undefined;
      // Not the agent of the Worker the console binds (another Worker's, or one it cannot place): keyed apart by class.
      // A message carrying its ancestry itself (an admin mixin that adds it) is a sub-agent's: keyed by it instead.
      const carried = !parentPath && readParentPath((m as Record<string, unknown>).parentPath) !== null;
      const classKey =
        m.agent && m.name && !parentPath && !carried && item.durableObjectId
          ? opts.classKeys?.(item.scriptName ?? "", item.durableObjectId, m.agent, m.name)
          : undefined;
      const keyed = classKey ? { ...m, agent: classKey } : m;
      if (keyed.agent && keyed.name) turns.hear(m.type, keyed.agent, agentKeyName(keyed.name, parentPath), m.payload ?? {}, item.scriptName, mask);
      // A chat turn's carrier Task is kept for the chat-turn fold, which alone knows whether its agent reports the
      // turn itself (Think) or the carrier is the turn (a top-level AIChatAgent).
      const e = normalizeSdkEvent(parentPath ? { ...keyed, parentPath } : keyed, undefined, mask, {}, { keepChatCarriers: true, ...opts.normalize });
      if (!e) {
        out.noise++;
        return;
      }
      e.time = time;
      e.id = tailEventId(item, index, time, text);
      if (e.type === "fiber.recovery.handled") Object.assign(e.payload, hookOutcome(hooks, m));
      if (e.type === "fiber.recovery.failed") Object.assign(e.payload, recoveryFailureRecord(m));
      if (!turns.annotate(e, item.scriptName)) {
        out.noise++;
        return;
      }
      out.events.push(e);
    });
    const worker = item.scriptName ?? "";
    const objectId = item.durableObjectId;
    const a = mem.agent;
    if (objectId && a) {
      const key = `${worker}\0${objectId}\0${a.agent}\0${a.name}`;
      if (!named.has(key)) {
        named.add(key);
        out.objects.push({ worker, objectId, agentClass: a.agent, agentName: a.name });
      }
    }
    const alarmAt = alarmScheduledTime(item);
    // Only a whole item says "nothing was published": one cut short may have lost what was.
    if (whole && objectId && alarmAt !== null && mem.sdkMessages === 0 && !mem.cut && !item.truncated)
      out.silentWakes.push({ worker, objectId, agentClass: item.entrypoint ?? null, at: item.eventTimestamp ?? alarmAt });
    if (whole && (mem.cut || item.truncated)) {
      out.losses.push({
        key: `tail:${fnv64(`${json(origin(item, null))}\0truncated`)}`,
        reason: TRUNCATED_REASON,
        body: JSON.stringify({ ...origin(item, mem.agent), eventsKept: mem.offset, limitNotice: mem.cut, truncated: item.truncated }),
      });
    }
  }
  return out;
}

/**
 * The Durable Objects of these items whose SDK messages (or own events on AGENT_CHANNEL, without ancestry) name an
 * agent and that announced no ancestry for it (the admin mixin's PARENT_MESSAGE_TYPE): the ones whose parent, if
 * they are facets, only their object id can tell, and whose Worker only their object id can tell locally.
 * Once per object and name; nothing is normalised or kept.
 */
export function unannouncedObjects(items: readonly TailItem[]): TailObject[] {
  const out = new Map<string, TailObject>();
  for (const item of items) {
    if (!item.durableObjectId || !Array.isArray(item.diagnosticsChannelEvents)) continue;
    const announced = new Set<string>();
    const named = new Map<string, [string, string]>();
    for (const entry of item.diagnosticsChannelEvents) {
      const channel = typeof entry?.channel === "string" ? entry.channel : "";
      const m = entry?.message as Record<string, unknown> | undefined;
      if (!m || typeof m !== "object" || typeof m.agent !== "string" || typeof m.name !== "string" || !m.agent || !m.name) continue;
      if (channel === AGENT_CHANNEL && m.type === PARENT_MESSAGE_TYPE) announced.add(`${m.agent}\0${m.name}`);
      else if (channel.startsWith(SDK_CHANNEL_PREFIX)) named.set(`${m.agent}\0${m.name}`, [m.agent, m.name]);
      // The agent's own events (no ancestry in them): an invocation may publish only those, keyed like its SDK messages.
      else if (channel === AGENT_CHANNEL && m.parentPath === undefined) named.set(`${m.agent}\0${m.name}`, [m.agent, m.name]);
    }
    const worker = item.scriptName ?? "";
    for (const [k, [agentClass, agentName]] of named) {
      if (announced.has(k)) continue;
      out.set(`${worker}\0${item.durableObjectId}\0${k}`, { worker, objectId: item.durableObjectId, agentClass, agentName });
    }
  }
  return [...out.values()];
}

/**
 * One message of AGENT_CHANNEL: a contract event (validated by the envelope's zod schemas, its free text masked), a
 * sub-agent's ancestry, or a loss saying why it could not be taken.
 */
function fromAgentChannel(
  item: TailItem,
  index: number,
  at: number,
  message: unknown,
  mask: Masker,
  classKeys: ClassKeys | undefined,
): { event: TelemetryEvent } | { parent: { agent: string; name: string; parentPath: AgentPathStep[] } } | { loss: TailLoss } {
  const text = json(message);
  const lost = (why: string, agent: { agent: string; name: string } | null = null) => ({
    loss: {
      key: `tail:${fnv64(`${json(origin(item, null))}\0${index}\0${text ?? String(message)}`)}`,
      reason: `${UNREADABLE_PREFIX}message on ${AGENT_CHANNEL}: ${why}`.slice(0, 1000),
      body: JSON.stringify({ ...origin(item, agent), channel: AGENT_CHANNEL, position: index, message: text?.slice(0, 2000) ?? null }),
    },
  });
  const m = agentMessage.safeParse(message);
  if (!m.success || text === null) return lost(m.success ? "not serialisable" : describeIssues(m.error));
  const { type, agent, name, parentPath } = m.data;
  if (type === PARENT_MESSAGE_TYPE)
    return parentPath ? { parent: { agent, name, parentPath } } : lost("an ancestry message without its parentPath", { agent, name });
  if (!AGENT_PUBLISHED_TYPES.has(type)) return lost(`"${type.slice(0, 100)}" is not an event type an agent publishes`, { agent, name });
  const time = Math.round(m.data.timestamp) || at;
  const candidate = {
    v: SCHEMA_VERSION,
    id: tailEventId(item, index, time, text),
    time,
    type,
    source: {
      // Keyed like the object's SDK messages: apart, when it is not the bound Worker's agent.
      agentClass: (!parentPath && item.durableObjectId ? classKeys?.(item.scriptName ?? "", item.durableObjectId, agent, name) : undefined) ?? agent,
      agentName: agentKeyName(name, parentPath),
      ...(parentPath ? { parentPath } : {}),
    },
    corr: m.data.corr ?? {},
    payload: maskJson(m.data.payload, mask),
  };
  const parsed = parseEvent(candidate);
  return parsed.ok ? { event: parsed.event } : lost(`not a valid ${type.slice(0, 100)} event: ${parsed.reason}`, { agent, name });
}

/**
 * Sends captured events to the telemetry Queue, packed as the outbox packs them (pack.ts), each signed when a key
 * is given (signing.ts). Throws when the Queue refuses a send.
 */
export async function sendPackedEvents(queue: QueueLike, events: readonly TelemetryEvent[], key: CryptoKey | null): Promise<void> {
  const bodies = await Promise.all(events.map((e) => (key ? signEventText(JSON.stringify(e), key) : JSON.stringify(e))));
  await sendPacked(queue, bodies);
}
