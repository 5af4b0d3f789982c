import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { app } from "../../worker/app";
import { type IngestEnv, ingestBatch, ingestOptionsFromEnv } from "../../worker/ingest/consumer";
import { patient } from "../patience";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import {
  DEAD_PREFIX,
  drainTraceExports,
  eventCorpus,
  fuzzSeed,
  type Identity,
  type Item,
  MARKUP,
  type Message,
  Recorder,
  reasonClass,
  registeredRoutes,
  table,
  unreadable,
  VICTIM_SEQ,
  type Victim,
  victimEvents,
  victimOf,
} from "./corpus";

// A generated corpus of hostile events (seeded: FUZZ_SEED replays one) goes through the real Queue into
// the real consumer and D1. Every item must end up stored exactly once or in dead_letters with a reason
// a person can read; forged events must not change the victim agent's rows; and then every page and JSON
// endpoint the app registers, filled with ids from the corpus, must answer viewers and operators without
// a 5xx and without hostile markup in its HTML.

const SEED = fuzzSeed();
const NONCE = crypto.randomUUID().replace(/-/g, "").slice(0, 8);
const START = Date.now() - 1000;
const victim: Victim = victimOf(NONCE);
const enc = encodeURIComponent;

type DeadRow = { message_id: string; reason: string; event_type: string | null; head: string; len: number };
type EventRow = { id: string; agent_class: string; agent_name: string };

const PROJECTIONS = {
  agents: "agent_name",
  runs: "fiber_id",
  incidents: "incident_id",
  op_ambiguities: "op_id",
  workspace_backups: "handle",
  sessions: "session_name",
  events: "id",
} as const;

/** Every row the victim agent owns, in every projection and in events. */
async function victimRows(): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const [table, key] of Object.entries(PROJECTIONS)) {
    out[table] = (
      await env.DB.prepare(`SELECT * FROM ${table} WHERE agent_class = ? AND agent_name = ? ORDER BY ${key}`)
        .bind(victim.identity.agentClass, victim.identity.agentName)
        .all()
    ).results;
  }
  return out;
}

/** Events rows by id, in chunks (one JSON parameter each). */
async function eventsById(ids: string[]): Promise<Map<string, EventRow[]>> {
  const out = new Map<string, EventRow[]>();
  for (let i = 0; i < ids.length; i += 150) {
    const rows = await env.DB.prepare("SELECT id, agent_class, agent_name FROM events WHERE id IN (SELECT value FROM json_each(?1))")
      .bind(JSON.stringify(ids.slice(i, i + 150)))
      .all<EventRow>();
    for (const r of rows.results) out.set(r.id, [...(out.get(r.id) ?? []), r]);
  }
  return out;
}

/** Dead letters since the test started: the start of each body (needles sit there by construction), its length. */
async function deadSince(): Promise<DeadRow[]> {
  return (
    await env.DB.prepare(
      `SELECT message_id, reason, event_type, substr(body, 1, ${DEAD_PREFIX}) AS head, length(body) AS len FROM dead_letters WHERE received_at >= ?`,
    )
      .bind(START)
      .all<DeadRow>()
  ).results;
}

/** Needles found in a dead letter: the corpus's own tags, and the base64 start of a binary body. */
function needlesOf(row: DeadRow): string[] {
  const found = row.head.match(new RegExp(`fz${NONCE}_\\d+_`, "g")) ?? [];
  const b64 = /"base64":"([A-Za-z0-9+/]{64})/.exec(row.head)?.[1];
  return b64 ? [...found, b64] : found;
}

type Sent = { msg: Message; via: "queue" | "direct"; mid?: string; why?: string };

/** What became of every item, as far as D1 shows now. */
function resolve(sent: Sent[], dead: DeadRow[], events: Map<string, EventRow[]>) {
  const byNeedle = new Map<string, DeadRow[]>();
  const byId = new Map<string, DeadRow>();
  for (const row of dead) {
    byId.set(row.message_id, row);
    for (const n of needlesOf(row)) byNeedle.set(n, [...(byNeedle.get(n) ?? []), row]);
  }
  const pending: string[] = [];
  const results: { item: Item; msg: Message; dead: DeadRow | null; stored: EventRow[] }[] = [];
  for (const s of sent) {
    const { msg } = s;
    // The message's id in dead_letters: known for direct sends, else found through any of its items' needles.
    let base: string | null = s.mid ?? null;
    if (!base) {
      msg.items.forEach((item, i) => {
        if (base || !item.needle) return;
        const row = (byNeedle.get(item.needle) ?? []).find((r) => (msg.packed ? r.message_id.endsWith(`#${i}`) : !r.message_id.includes("#")));
        if (row) base = msg.packed ? row.message_id.slice(0, -`#${i}`.length) : row.message_id;
      });
    }
    msg.items.forEach((item, i) => {
      const key = base === null ? null : msg.packed ? `${base}#${i}` : base;
      const deadRow = key ? (byId.get(key) ?? null) : null;
      // Ids are unique per agent (the hot store dedupes by agent and id): the rows that are this item's are its agent's.
      const who = item.identity ?? item.owner;
      const rows = item.eventId ? (events.get(item.eventId) ?? []) : [];
      const stored = who ? rows.filter((r) => r.agent_class === who.agentClass && r.agent_name === who.agentName) : rows;
      results.push({ item, msg, dead: deadRow, stored });
      if (msg.markerless !== undefined) return; // counted separately
      if (item.expect === "stored" && !stored.length) pending.push(`${item.label}: not stored yet`);
      if (item.expect === "dead" && !deadRow) pending.push(`${item.label}: no dead letter yet`);
      // A reused id leaves no trace of its own: its message is processed once the message's anchor is dead-lettered.
      if (item.expect === "duplicate" && base === null) pending.push(`${item.label}: its message is not processed yet`);
    });
  }
  return { results, pending };
}

/** The markerless bodies sent, and how many dead letters with exactly that body exist since the start. */
async function markerlessCounts(sent: Sent[]) {
  const want = new Map<string, number>();
  for (const s of sent) if (s.msg.markerless !== undefined) want.set(s.msg.markerless, (want.get(s.msg.markerless) ?? 0) + 1);
  const out: { body: string; want: number; got: number; reasons: string[] }[] = [];
  for (const [body, n] of want) {
    const rows = (await env.DB.prepare("SELECT reason FROM dead_letters WHERE received_at >= ? AND body = ?").bind(START, body).all<{ reason: string }>())
      .results;
    out.push({ body, want: n, got: rows.length, reasons: [...new Set(rows.map((r) => r.reason))] });
  }
  return out;
}

const bytesOfBody = (m: Message): number => {
  if (typeof m.body === "string") return new TextEncoder().encode(m.body).byteLength;
  if (m.body instanceof ArrayBuffer || ArrayBuffer.isView(m.body)) return m.body.byteLength;
  try {
    return new TextEncoder().encode(JSON.stringify(m.body)).byteLength;
  } catch {
    return 64_000; // not JSON-able (BigInt, too deep): sent on its own
  }
};

/** Sends through the real Queue; what the Queue refuses goes straight to ingestBatch, with the Queue's words recorded. */
async function send(messages: Message[]): Promise<Sent[]> {
  const sent: Sent[] = [];
  const direct: Sent[] = [];
  const opts = await ingestOptionsFromEnv(env as unknown as IngestEnv);
  const toDirect = (msg: Message, why: string) => {
    const s: Sent = { msg, via: "direct", mid: `fz-direct-${NONCE}-${direct.length}`, why };
    direct.push(s);
    sent.push(s);
  };
  const one = async (msg: Message) => {
    try {
      await env.TELEMETRY_QUEUE.send(msg.body, { contentType: msg.contentType });
      sent.push({ msg, via: "queue" });
    } catch (e) {
      toDirect(msg, `the Queue refused it: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}${msg.direct ? ` (${msg.direct})` : ""}`);
    }
  };
  let batch: Message[] = [];
  let size = 0;
  const flush = async () => {
    if (!batch.length) return;
    const b = batch;
    batch = [];
    size = 0;
    try {
      await env.TELEMETRY_QUEUE.sendBatch(b.map((m) => ({ body: m.body, contentType: m.contentType })));
      for (const msg of b) sent.push({ msg, via: "queue" });
    } catch {
      for (const msg of b) await one(msg);
    }
  };
  for (const msg of messages) {
    const bytes = bytesOfBody(msg);
    // Bodies over the Queue's 128 KB limit are offered to it anyway: its refusal is what sends them direct.
    if (bytes > 60_000 || msg.contentType === "v8" || msg.direct) {
      await one(msg);
      continue;
    }
    if (batch.length >= 100 || size + bytes > 200_000) await flush();
    batch.push(msg);
    size += bytes;
  }
  await flush();
  for (const s of direct) await ingestBatch(env.DB, [{ id: s.mid!, body: s.msg.body }], opts);
  return sent;
}

/**
 * Polls D1 until every item's fate is visible (the Queue delivers asynchronously; a failed batch is retried
 * after 2 s, up to 3 times, then dead-lettered by the DLQ consumer). Gives up when nothing has changed for
 * `quiet` ms, so a lost item fails the test with its name instead of a timeout.
 */
async function settle(sent: Sent[], quiet = patient(12_000), timeout = patient(60_000)) {
  const ids = [...new Set(sent.flatMap((s) => s.msg.items.map((i) => i.eventId).filter((x): x is string => !!x)))];
  const deadline = Date.now() + timeout;
  let last = -1;
  let lastChange = Date.now();
  for (;;) {
    const [dead, events, markerless] = await Promise.all([deadSince(), eventsById(ids), markerlessCounts(sent)]);
    const r = resolve(sent, dead, events);
    const short = markerless.filter((m) => m.got < m.want);
    const progress = dead.length + events.size;
    if (progress !== last) [last, lastChange] = [progress, Date.now()];
    const stuck = Date.now() - lastChange > quiet || Date.now() > deadline;
    if ((!r.pending.length && !short.length) || stuck) return { ...r, dead, events, markerless, timedOut: stuck };
    await scheduler.wait(300);
  }
}

let corpus: ReturnType<typeof eventCorpus>;
let sent: Sent[];
let victimBefore: Record<string, unknown[]>;
let victimAfter: Record<string, unknown[]>;
/** What became of every item, once the first test has settled them. */
let results: Awaited<ReturnType<typeof settle>>["results"];
const timings: Record<string, number> = {};

beforeAll(async () => {
  await publishEnvTeamKeys();
  // The victim first, through valid events on the real Queue: a running session, a fiber, incidents, an op, a backup.
  const v = victimEvents(victim, Date.now());
  await env.TELEMETRY_QUEUE.send(JSON.stringify(v), { contentType: "text" });
  const deadline = Date.now() + patient(20_000);
  while ((await eventsById(v.map((e) => String(e.id)))).size < v.length) {
    if (Date.now() > deadline) throw new Error(`the victim's events were not stored within ${patient(20_000) / 1000} s`);
    await scheduler.wait(100);
  }
  victimBefore = await victimRows();
  expect(victimBefore.sessions).toHaveLength(1);
  expect(victimBefore.runs).toHaveLength(1);
  expect(victimBefore.incidents).toHaveLength(2);
  expect(victimBefore.op_ambiguities).toHaveLength(1);
  expect(victimBefore.workspace_backups).toHaveLength(1);
  corpus = eventCorpus({ seed: SEED, nonce: NONCE, now: Date.now(), victim });
});

// Let the console's trace exports of the requests above finish before the worker shuts down.
afterAll(() => drainTraceExports(env.OTLP_CONTROL));

describe(`hostile events (seed ${SEED}, run ${NONCE})`, () => {
  it("each is stored exactly once or kept in dead_letters with a reason a person can read", { timeout: patient(120_000) }, async () => {
    let t = Date.now();
    sent = await send(corpus.messages);
    timings.send = Date.now() - t;
    t = Date.now();
    await settle(sent);
    timings.settle = Date.now() - t;

    // Redelivery: four packed messages again (new message ids, as a Queue redelivery or an outbox resend gives them).
    // Each needs a dead item with a needle too: its second dead letter is how the redelivery is seen.
    const again = sent
      .filter(
        (s) => s.via === "queue" && s.msg.packed && s.msg.items.some((i) => i.expect === "stored") && s.msg.items.some((i) => i.expect === "dead" && i.needle),
      )
      .slice(0, 4);
    await send(again.map((s) => s.msg));
    const anchors = again.map((s) => s.msg.items.find((i) => i.expect === "dead" && i.needle)!.needle!);
    const redeliveryDeadline = Date.now() + patient(30_000);
    for (;;) {
      const rows = await deadSince();
      const seen = anchors.map((n) => rows.filter((r) => needlesOf(r).includes(n)).length);
      if (seen.every((c) => c >= 2)) break;
      expect(Date.now() < redeliveryDeadline, `redelivered messages not processed: ${JSON.stringify(seen)}`).toBe(true);
      await scheduler.wait(300);
    }
    const final = await settle(sent, patient(3_000));
    results = final.results;

    const problems: string[] = [];
    for (const { item, msg, dead, stored } of final.results) {
      const what = `[${msg.category}] ${item.label} (in "${msg.label}")`;
      if (msg.markerless !== undefined) continue;
      if (item.expect === "stored") {
        if (stored.length !== 1) problems.push(`${what}: stored ${stored.length} times, expected once${dead ? `; dead-lettered: ${dead.reason}` : ""}`);
        else if (item.identity && (stored[0]!.agent_class !== item.identity.agentClass || stored[0]!.agent_name !== item.identity.agentName)) {
          problems.push(`${what}: stored under ${JSON.stringify([stored[0]!.agent_class, stored[0]!.agent_name])}, sent as ${JSON.stringify(item.identity)}`);
        }
        if (dead) problems.push(`${what}: valid, but also dead-lettered: ${dead.reason}`);
      } else if (item.expect === "dead") {
        if (!dead) problems.push(`${what}: neither stored nor dead-lettered (lost)${stored.length ? " — it was STORED" : ""}`);
        else {
          const why = unreadable(400, "text/plain", dead.reason);
          if (why) problems.push(`${what}: dead letter reason not readable (${why}): ${dead.reason}`);
          if (/^delivery failed/.test(dead.reason)) problems.push(`${what}: ingest threw on it until the Queue gave up: ${dead.reason}`);
        }
        if (stored.length) problems.push(`${what}: invalid, but stored`);
      } else {
        const owner = item.owner!;
        if (stored.length !== 1 || stored[0]!.agent_class !== owner.agentClass || stored[0]!.agent_name !== owner.agentName) {
          problems.push(`${what}: the stored row for a reused id changed: ${JSON.stringify(stored)}`);
        }
      }
    }
    for (const m of final.markerless) {
      if (m.got < m.want) problems.push(`markerless body ${JSON.stringify(m.body)}: sent ${m.want}, dead letters ${m.got}`);
      for (const reason of m.reasons)
        if (unreadable(400, "text/plain", reason)) problems.push(`markerless body ${JSON.stringify(m.body)}: unreadable reason ${reason}`);
    }
    // Prototype keys in events stayed data: nothing reached Object.prototype.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    // The report: inputs, outcomes, dead letters grouped by reason.
    const items = final.results;
    const mine = new Set(final.results.map((r) => r.dead?.message_id).filter((x): x is string => !!x));
    const deadRows = final.dead.filter((r) => mine.has(r.message_id));
    const byReason = new Map<string, number>();
    for (const r of deadRows) byReason.set(reasonClass(r.reason), (byReason.get(reasonClass(r.reason)) ?? 0) + 1);
    for (const m of final.markerless) for (const reason of m.reasons) byReason.set(reasonClass(reason), (byReason.get(reasonClass(reason)) ?? 0) + m.got);
    const byCategory = new Map<string, number>();
    for (const { item } of items) byCategory.set(item.category, (byCategory.get(item.category) ?? 0) + 1);
    const directs = sent.filter((s) => s.via === "direct");
    console.log(
      [
        table(`events fuzz, seed ${SEED}, run ${NONCE}`, [
          ["messages sent", sent.length],
          ["  through the Queue", sent.filter((s) => s.via === "queue").length],
          ["  straight to ingestBatch (the Queue refused them)", directs.length],
          ["inputs tried (events and packed items)", items.length],
          ["expected stored", items.filter((r) => r.item.expect === "stored").length],
          ["stored (exactly once)", items.filter((r) => r.item.expect === "stored" && r.stored.length === 1).length],
          ["reused ids (stored row unchanged)", items.filter((r) => r.item.expect === "duplicate").length],
          ["expected dead-lettered", items.filter((r) => r.item.expect === "dead").length],
          ["dead-lettered", deadRows.length + final.markerless.reduce((n, m) => n + Math.min(m.got, m.want), 0)],
          ["redelivered packed messages", again.length],
          ["send ms / settle ms", `${timings.send}/${timings.settle}`],
        ]),
        table("inputs by category", [...byCategory].sort()),
        table(
          "dead letters by reason",
          [...byReason].sort((a, b) => b[1] - a[1]),
        ),
        ...directs.map((d) => `direct: "${d.msg.label}": ${d.why}`),
      ].join("\n\n"),
    );
    expect(problems, problems.slice(0, 30).join("\n")).toEqual([]);
    expect(final.pending.slice(0, 20), "items whose fate never showed in D1").toEqual([]);
  });

  it("forged events change none of the victim's rows; the forgers get rows of their own", async () => {
    victimAfter = await victimRows();
    expect(victimAfter).toEqual(victimBefore);
    for (const f of corpus.forgers) {
      const own = await env.DB.prepare("SELECT status FROM sessions WHERE session_name = ? AND agent_class = ? AND agent_name = ?")
        .bind(victim.session, f.agentClass, f.agentName)
        .all();
      expect(own.results, `forger ${JSON.stringify(f)} has its own session row`).toHaveLength(1);
      const fiber = await env.DB.prepare("SELECT outcome FROM runs WHERE fiber_id = ? AND agent_class = ? AND agent_name = ?")
        .bind(victim.fiberId, f.agentClass, f.agentName)
        .all();
      expect(fiber.results, `forger ${JSON.stringify(f)} has its own fiber row`).toHaveLength(1);
    }
  });

  it("each agent's event numbers count its stored numbered events once: redelivered, duplicated, refused or forged ones do not", async () => {
    const key = (who: Identity) => JSON.stringify([who.agentClass, who.agentName]);
    const expected = new Map<string, { ids: Set<string>; max: number | null }>();
    for (const who of [...corpus.identities, ...corpus.forgers]) expected.set(key(who), { ids: new Set(), max: null });
    for (const { item, stored } of results) {
      if (item.expect !== "stored" || item.seq === undefined || stored.length !== 1 || !item.identity) continue;
      const e = expected.get(key(item.identity))!;
      e.ids.add(item.eventId!);
      e.max = Math.max(e.max ?? 0, item.seq);
    }
    const numbered = [...expected.values()].filter((e) => e.ids.size > 0).length;
    expect(numbered, "the corpus numbers events of several agents").toBeGreaterThan(5);
    const got = new Map<string, { seq_max: number | null; seq_seen: number }>();
    for (const who of [...corpus.identities, ...corpus.forgers, victim.identity]) {
      const row = await env.DB.prepare("SELECT seq_max, seq_seen FROM agents WHERE agent_class = ? AND agent_name = ?")
        .bind(who.agentClass, who.agentName)
        .first<{ seq_max: number | null; seq_seen: number }>();
      if (row) got.set(key(who), row);
    }
    const mismatches = [...expected].filter(([k, e]) => {
      const row = got.get(k) ?? { seq_max: null, seq_seen: 0 };
      return row.seq_max !== e.max || row.seq_seen !== e.ids.size;
    });
    expect(mismatches.map(([k, e]) => `${k}: expected max ${e.max}, seen ${e.ids.size}; got ${JSON.stringify(got.get(k))}`)).toEqual([]);
    expect(got.get(key(victim.identity))).toEqual({ seq_max: VICTIM_SEQ.max, seq_seen: VICTIM_SEQ.seen });
  });

  it("every page and JSON endpoint, filled with the corpus's ids, answers viewers and operators without a 5xx or unescaped markup", {
    timeout: patient(120_000),
  }, async () => {
    const t = Date.now();
    const rec = new Recorder();
    const idents: Identity[] = [victim.identity, ...corpus.identities, ...corpus.forgers];
    const like = `%${NONCE}%`;
    const col = async (sql: string, ...binds: unknown[]) =>
      (
        await env.DB.prepare(sql)
          .bind(...binds)
          .all<{ v: string }>()
      ).results.map((r) => r.v);
    /** Hostile values first: markup, quotes, control and non-ASCII characters. */
    const hostileFirst = (vals: string[], n: number) => {
      const score = (s: string) => (/[<>"']/.test(s) ? 2 : 0) + (/[^\x20-\x7e]/.test(s) ? 1 : 0);
      return [...new Set(vals)].sort((a, b) => score(b) - score(a) || (a < b ? -1 : 1)).slice(0, n);
    };
    const never = [MARKUP[0], MARKUP[1], "a\u0000b", "x".repeat(10_000), "../../etc/passwd"];
    const values: Record<string, string[]> = {
      incidentId: [
        victim.chat,
        victim.turn,
        ...hostileFirst(await col("SELECT DISTINCT incident_id AS v FROM incidents WHERE agent_name LIKE ?", like), 8),
        ...never,
      ],
      fiberId: [victim.fiberId, ...hostileFirst(await col("SELECT DISTINCT fiber_id AS v FROM runs WHERE agent_name LIKE ?", like), 8), ...never],
      name: [victim.session, ...hostileFirst(await col("SELECT DISTINCT session_name AS v FROM sessions WHERE agent_name LIKE ?", like), 8), ...never],
    };
    values.runId = values.fiberId!;
    const routes = registeredRoutes(app.routes).filter((r) => r.method === "GET");
    expect(routes.length).toBeGreaterThan(15);
    const urls: string[] = [];
    const ownerQuery = `?agentClass=${enc(victim.identity.agentClass)}&agentName=${enc(victim.identity.agentName)}`;
    for (const route of routes) {
      const { pattern, params } = route;
      if (!params.length) {
        urls.push(pattern);
        for (const who of idents.slice(0, 6)) urls.push(`${pattern}?agentClass=${enc(who.agentClass)}&agentName=${enc(who.agentName)}`);
        urls.push(`${pattern}?reason=${enc(MARKUP[0])}&targetName=${enc(idents[1]!.agentName)}&sessionName=${enc(victim.session)}&tenant=${enc(MARKUP[1])}`);
        continue;
      }
      if (params.includes("agentClass")) {
        for (const who of idents) {
          const base = pattern.replace(":agentClass", enc(who.agentClass)).replace(":agentName", enc(who.agentName));
          if (!params.includes("runId")) {
            urls.push(base);
            continue;
          }
          const runs = await col("SELECT fiber_id AS v FROM runs WHERE agent_class = ? AND agent_name = ? LIMIT 2", who.agentClass, who.agentName);
          for (const run of [...runs, MARKUP[0], victim.fiberId]) urls.push(base.replace(":runId", enc(run)));
        }
        continue;
      }
      const [param] = params;
      for (const v of values[param!] ?? []) {
        const url = pattern.replace(`:${param}`, enc(v));
        urls.push(url, `${url}${ownerQuery}`);
      }
    }
    const calls: (() => Promise<unknown>)[] = [];
    for (const url of [...new Set(urls)]) {
      calls.push(
        () => rec.call(url, "viewer"),
        () => rec.call(url, "operator"),
        () => rec.call(url, "viewer", { headers: { Accept: "application/json" } }),
      );
    }
    await rec.all(calls);
    // The pages showed the hostile values (escaped), rather than dropping them.
    const markupAgent = corpus.identities[1]!;
    expect(markupAgent.agentName).toContain(MARKUP[0]);
    const agentPage = await rec.call(`/agents/${enc(markupAgent.agentClass)}/${enc(markupAgent.agentName)}`, "operator");
    expect(agentPage.status).toBe(200);
    expect(agentPage.text).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    console.log(`${rec.summary(`pages over the hostile corpus (${new Set(urls).size} URLs × viewer, operator, JSON)`)}\n  took ${Date.now() - t} ms`);
    expect(rec.serverErrors, JSON.stringify(rec.serverErrors.slice(0, 10), null, 1)).toEqual([]);
    expect(rec.reflected, JSON.stringify(rec.reflected.slice(0, 10), null, 1)).toEqual([]);
    expect(rec.unreadable, JSON.stringify(rec.unreadable.slice(0, 10), null, 1)).toEqual([]);
  });
});
