import type { RunKind } from "@agent-oncall/telemetry/contract";
import { z } from "zod";
import { partitionFor, type Store } from "../partitions";
import { agents, eventSegments, incidents, opAmbiguities, runs, sessions } from "../schema";
import { names } from "../sql-names";
import { BadRequest } from "./errors";
import { shownStatusSql } from "./incident-status";
import { compareKey } from "./merged";
import type { AgentRef } from "./owner";
import { rowsReadOf, type SortValue } from "./paging";

/**
 * Search by any id: one string, exact matches across the projections (incident ids, run ids — fiber ids,
 * Tasks run ids and chat turns' request ids —, ambiguous op ids, session names, agent names) and, through the
 * events that carry it, the runs, incidents and sessions a request, task, op, fiber or trace id belongs to.
 *
 * Every projection lookup is an index seek on a leading column (the projections' primary keys) with a LIMIT,
 * so it reads a few rows per agent that reported the id, whatever the table sizes. Two exceptions, both
 * bounded: agent names are looked up once per agent class (a skip scan over the registry's primary key), and
 * ids only events carry (request, task, op, fiber and trace ids of the hot timeline), which no index covers:
 * they are looked for among the events of the newest EVENT_SCAN_SEGMENTS segments only (rowid order, no
 * index), and the result says how many events that was.
 */

/** The longest query accepted: ids here are far shorter; anything longer is a paste gone wrong. */
export const MAX_QUERY_LENGTH = 200;
/** Prefix search ("starts with") is tried for queries at least this long, when nothing matches exactly. */
export const MIN_PREFIX_LENGTH = 6;
/** Matches returned at most; `truncated` says when there were more. */
export const MAX_MATCHES = 50;
/** Rows read per lookup: enough to list every agent that reported one id. */
const PER_LOOKUP = 11;
/** Events an event-id lookup returns at most. */
const EVENT_ROWS = 50;
/** Agent classes the agent-name lookup visits at most. */
const MAX_CLASSES = 100;
/** Newest segments (each one D1 row) ids only events carry are looked for in: no index covers them. */
export const EVENT_SCAN_SEGMENTS = 500;

export const SEARCH_KINDS = ["incident", "run", "op", "session", "agent"] as const;
export type SearchKind = (typeof SEARCH_KINDS)[number];

/**
 * The id a query was matched against: a projection's key (incident, run, op, session), the id a run is known by
 * (request for a chat turn, task, fiber), an event field (request, task, op, fiber, trace), or an agent's
 * "Class/name" (`agent_key`) or bare name (`agent_name`).
 */
export const SEARCH_FIELDS = ["incident", "request", "task", "op", "fiber", "trace", "run", "session", "agent_key", "agent_name"] as const;
export type SearchField = (typeof SEARCH_FIELDS)[number];

/**
 * How a query matched: against the thing's own `field` (`id`), against that field of one of its events (`event`),
 * or as the start of its `field` (`prefix`). The console words it (console/words.ts searchViaWords).
 */
export type SearchVia = { field: SearchField; by: "id" | "event" | "prefix" };

/** The event fields ids only events carry are looked for in, in the order their matches are preferred. */
const EVENT_FIELDS = ["request", "task", "op", "fiber", "trace"] as const satisfies readonly SearchField[];
type EventField = (typeof EVENT_FIELDS)[number];

/**
 * One thing the query names, with its agent (ids are unique per agent only) and, per kind, the facts that say
 * what it is (its kind, status, reason); the console labels it from them (console/words.ts searchMatchLabel).
 */
export type SearchMatch = AgentRef & {
  /** The matched thing's own id: incident id, run id, op id, session name, or the agent's name. */
  id: string;
  /** How the query matched it, as facts: e.g. { field: "request", by: "event" } (one of its events carries it as request id). */
  via: SearchVia;
} & (
    | { kind: "incident"; incidentKind: string /** as shown (shownStatusSql) */; status: string; reason: string | null }
    | { kind: "run"; runKind: RunKind; runName: string /** null while it runs */; outcome: string | null }
    | { kind: "op"; opKind: string | null /** null while open */; resolution: string | null /** its page is the session's */; sessionName: string | null }
    | { kind: "session" /** null when none was reported */; status: string | null }
    | { kind: "agent" }
  );

export type SearchResult = {
  query: string;
  matches: SearchMatch[];
  /** More than MAX_MATCHES matched. */
  truncated: boolean;
  /** Nothing matched exactly and the matches are ids starting with the query. */
  prefix: boolean;
  /** The query looks like a trace id: it was looked for among this many newest events only. */
  traceWindow: number | null;
  /** How many of the newest events the ids only events carry were looked for in (EVENT_SCAN_SEGMENTS segments). */
  eventWindow: number;
  rowsRead: number;
};

/** The query: trimmed, 1 to MAX_QUERY_LENGTH characters. */
export const searchQuery = z.preprocess(
  (v) => (Array.isArray(v) ? v[0] : v),
  z
    .string({ error: "q must be text: the id to search for" })
    .trim()
    .min(1, { error: "Type an id to search for (an incident, request, op, fiber, task or trace id, a session or an agent name)." })
    .max(MAX_QUERY_LENGTH, { error: `The search is longer than ${MAX_QUERY_LENGTH} characters; ids are shorter. Paste just the id.` }),
);

const I = names(incidents);
const F = names(runs);
const O = names(opAmbiguities);
const S = names(sessions);
const A = names(agents);

type IncidentHit = AgentRef & { id: string; kind: string; status: string; reason: string | null };
type RunHit = AgentRef & { id: string; kind: string; name: string; outcome: string | null };
type OpHit = AgentRef & { id: string; opKind: string | null; resolution: string | null; sessionName: string | null };
type SessionHit = AgentRef & { id: string; status: string | null };
type AgentHit = AgentRef;
type EventHit = AgentRef & { incidentId: string | null; fiberId: string | null; taskId: string | null; requestId: string | null; sessionName: string | null };

const SEL = {
  incident: `${I.incidentId} AS id, ${I.kind} AS kind, ${shownStatusSql()} AS status, ${I.reason} AS reason, ${I.agentClass} AS agentClass, ${I.agentName} AS agentName`,
  run: `${F.fiberId} AS id, ${F.kind} AS kind, ${F.name} AS name, ${F.outcome} AS outcome, ${F.agentClass} AS agentClass, ${F.agentName} AS agentName`,
  op: `${O.opId} AS id, ${O.opKind} AS opKind, ${O.resolution} AS resolution, ${O.sessionName} AS sessionName, ${O.agentClass} AS agentClass, ${O.agentName} AS agentName`,
  session: `${S.sessionName} AS id, ${S.status} AS status, ${S.agentClass} AS agentClass, ${S.agentName} AS agentName`,
};

const TABLE = {
  incident: { table: I.$table, key: I.incidentId, cls: I.agentClass, name: I.agentName, select: SEL.incident },
  run: { table: F.$table, key: F.fiberId, cls: F.agentClass, name: F.agentName, select: SEL.run },
  op: { table: O.$table, key: O.opId, cls: O.agentClass, name: O.agentName, select: SEL.op },
  session: { table: S.$table, key: S.sessionName, cls: S.agentClass, name: S.agentName, select: SEL.session },
} as const;
type Keyed = keyof typeof TABLE;

/** Exact id: one primary-key prefix seek. */
function byId(db: D1Database, k: Keyed, id: string): D1PreparedStatement {
  const t = TABLE[k];
  return db.prepare(`SELECT ${t.select} FROM ${t.table} WHERE ${t.key} = ? ORDER BY ${t.cls}, ${t.name} LIMIT ${PER_LOOKUP}`).bind(id);
}

/** Ids starting with `prefix`: a range of the primary key (LIKE would not use it: it ignores case, the key does not). */
function byPrefix(db: D1Database, k: Keyed, prefix: string): D1PreparedStatement {
  const t = TABLE[k];
  return db
    .prepare(`SELECT ${t.select} FROM ${t.table} WHERE ${t.key} >= ? AND ${t.key} < ? ORDER BY ${t.key}, ${t.cls}, ${t.name} LIMIT ${PER_LOOKUP}`)
    .bind(prefix, `${prefix}\u{10FFFF}`);
}

/** One agent's row by class and name (the "Class/name" form). */
function agentByKey(db: D1Database, agentClass: string, agentName: string): D1PreparedStatement {
  return db
    .prepare(`SELECT ${A.agentClass} AS agentClass, ${A.agentName} AS agentName FROM ${A.$table} WHERE ${A.agentClass} = ? AND ${A.agentName} = ?`)
    .bind(agentClass, agentName);
}

/**
 * Agents of any class with this name. The registry's key is (class, name): a recursive query steps through
 * the distinct classes (one index seek each) and probes (class, name) for each, so it reads about two rows
 * per class instead of the whole registry.
 */
function agentsByName(db: D1Database, agentName: string): D1PreparedStatement {
  return db
    .prepare(
      `WITH RECURSIVE cls(c, n) AS (
         SELECT (SELECT MIN(${A.agentClass}) FROM ${A.$table}), 0
         UNION ALL
         SELECT (SELECT MIN(${A.agentClass}) FROM ${A.$table} WHERE ${A.agentClass} > cls.c), n + 1 FROM cls WHERE cls.c IS NOT NULL AND n < ${MAX_CLASSES}
       )
       SELECT a.${A.agentClass} AS agentClass, a.${A.agentName} AS agentName FROM cls JOIN ${A.$table} a ON a.${A.agentClass} = cls.c AND a.${A.agentName} = ?
       LIMIT ${PER_LOOKUP}`,
    )
    .bind(agentName);
}

const G = names(eventSegments);
/** The newest EVENT_SCAN_SEGMENTS segments, newest first by rowid (no index). */
const NEWEST = `SELECT ${G.agentClass} AS c, ${G.agentName} AS a, ${G.n} AS n, ${G.body} AS body FROM ${G.$table} ORDER BY rowid DESC LIMIT ${EVENT_SCAN_SEGMENTS}`;

/**
 * The distinct correlation ids of the events among the newest segments that carry the query as their request,
 * task, op, fiber or (when `trace`) trace id, each with the field it matched in (`via`), at most EVENT_ROWS;
 * and how many events those segments hold.
 */
function eventsCarrying(db: D1Database, value: string, trace: boolean): [D1PreparedStatement, D1PreparedStatement] {
  const f = (k: string) => `e.value ->> '$.${k}'`;
  // The field it matched in, as an EventField code.
  const via = `CASE ?1 WHEN ${f("r")} THEN 'request' WHEN ${f("k")} THEN 'task' WHEN ${f("o")} THEN 'op' WHEN ${f("f")} THEN 'fiber' ELSE 'trace' END`;
  const fields = [f("r"), f("k"), f("o"), f("f"), ...(trace ? [f("x")] : [])];
  return [
    db
      .prepare(
        `SELECT DISTINCT * FROM (SELECT s.c AS agentClass, s.a AS agentName, ${f("n")} AS incidentId, ${f("f")} AS fiberId, ${f("k")} AS taskId,
           ${f("r")} AS requestId, ${f("s")} AS sessionName, ${via} AS via
         FROM (${NEWEST}) s, json_each(s.body) e WHERE ?1 IN (${fields.join(", ")})) LIMIT ${EVENT_ROWS}`,
      )
      .bind(value),
    db.prepare(`SELECT COALESCE(SUM(n), 0) AS n FROM (${NEWEST})`),
  ];
}

const incidentMatch = (r: IncidentHit, via: SearchVia): SearchMatch => ({
  kind: "incident",
  id: r.id,
  agentClass: r.agentClass,
  agentName: r.agentName,
  via,
  incidentKind: r.kind,
  status: r.status,
  reason: r.reason,
});
const runMatch = (r: RunHit, via: SearchVia): SearchMatch => ({
  kind: "run",
  id: r.id,
  agentClass: r.agentClass,
  agentName: r.agentName,
  via,
  runKind: r.kind as RunKind,
  runName: r.name,
  outcome: r.outcome,
});
const opMatch = (r: OpHit, via: SearchVia): SearchMatch => ({
  kind: "op",
  id: r.id,
  agentClass: r.agentClass,
  agentName: r.agentName,
  via,
  opKind: r.opKind,
  resolution: r.resolution,
  sessionName: r.sessionName,
});
const sessionMatch = (r: SessionHit, via: SearchVia): SearchMatch => ({
  kind: "session",
  id: r.id,
  agentClass: r.agentClass,
  agentName: r.agentName,
  via,
  status: r.status,
});
const agentMatch = (r: AgentHit, via: SearchVia): SearchMatch => ({
  kind: "agent",
  id: r.agentName,
  agentClass: r.agentClass,
  agentName: r.agentName,
  via,
});

/** A match's identity: kind, id and agent. */
const keyOf = (m: Pick<SearchMatch, "kind" | "id" | "agentClass" | "agentName">) => JSON.stringify([m.kind, m.id, m.agentClass, m.agentName]);

/** What an event points at: its incident, its run (task, chat turn by request id, or fiber) and its session. */
function targetsOf(e: EventHit): { kind: "incident" | "run" | "session"; id: string; owner: AgentRef }[] {
  const owner = { agentClass: e.agentClass, agentName: e.agentName };
  const out: { kind: "incident" | "run" | "session"; id: string; owner: AgentRef }[] = [];
  if (e.incidentId) out.push({ kind: "incident", id: e.incidentId, owner });
  for (const id of [e.taskId, e.requestId, e.fiberId]) if (id) out.push({ kind: "run", id, owner });
  if (e.sessionName) out.push({ kind: "session", id: e.sessionName, owner });
  return out;
}

/** Candidates from events checked against the projections: at most this many primary-key probes. */
const MAX_PROBES = 30;

/** Rows of one statement read on every partition: concatenated and, with several, put back in the statement's order and cut at its limit. */
function merged<T>(results: D1Result<T>[], keyOf: (row: T) => SortValue[], limit: number): T[] {
  if (results.length === 1) return results[0]!.results;
  return results
    .flatMap((r) => r.results)
    .sort((a, b) => compareKey(keyOf(a), keyOf(b)))
    .slice(0, limit);
}

/** The same statements on every partition, in one batch each; the results regrouped per statement. */
async function onEvery(store: Store, make: (db: D1Database) => D1PreparedStatement[]): Promise<D1Result<never>[][]> {
  const each = (await Promise.all(store.parts.map((db) => db.batch(make(db))))) as D1Result<never>[][];
  return each[0]!.map((_, i) => each.map((r) => r[i]!));
}

const byAgent = (r: AgentRef): SortValue[] => [r.agentClass, r.agentName];
const byKeyAndAgent = (r: AgentRef & { id: string }): SortValue[] => [r.id, r.agentClass, r.agentName];
/** Event hits in a fixed order: by field preference (EVENT_FIELDS), then by what they point at. */
const hitKey = (e: EventHit & { via: EventField }): SortValue[] => [
  EVENT_FIELDS.indexOf(e.via),
  e.agentClass,
  e.agentName,
  e.incidentId ?? "",
  e.taskId ?? "",
  e.requestId ?? "",
  e.fiberId ?? "",
  e.sessionName ?? "",
];

/**
 * Finds what `input` (a raw query string) names: the projections' rows with that id; when there is none, what
 * the events carrying it belong to; when there is still none and the query is at least MIN_PREFIX_LENGTH long,
 * ids starting with it. Throws BadRequest for an empty or oversized query.
 * Matches are ordered by kind (SEARCH_KINDS), then as found: by agent for an exact id, by id for a prefix, by the
 * events' field preference and what they point at for an id only events carry.
 *
 * Over a partitioned store each lookup runs on every partition and its rows merge in the lookup's own order and
 * limit, so the answer is one database's; a check of an event's target reads the target's agent's partition. Ids
 * only events carry are looked for in each partition's newest EVENT_SCAN_SEGMENTS segments (`eventWindow` sums
 * them): the same events as one database while the store holds fewer segments than that, N times the window past
 * it. Reads about N × what one database reads.
 */
export async function searchIn(store: Store, input: unknown): Promise<SearchResult> {
  const parsed = searchQuery.safeParse(input);
  if (!parsed.success) throw new BadRequest(parsed.error.issues.map((i) => i.message).join("; "));
  const q = parsed.data;
  const slash = q.indexOf("/");
  const classAndName = slash > 0 && slash < q.length - 1 ? ([q.slice(0, slash), q.slice(slash + 1)] as const) : null;
  const isTrace = /^[0-9a-f]{32}$/.test(q);

  const results = await onEvery(store, (db) =>
    [
      byId(db, "incident", q),
      byId(db, "run", q),
      byId(db, "op", q),
      byId(db, "session", q),
      agentsByName(db, q),
      classAndName ? agentByKey(db, classAndName[0], classAndName[1]) : null,
      ...eventsCarrying(db, q, isTrace),
    ].filter((s): s is D1PreparedStatement => s !== null),
  );
  const read: D1Result[] = results.flat();
  const take = () => results.shift()!;
  const inc = merged<IncidentHit>(take(), byAgent, PER_LOOKUP);
  const run = merged<RunHit>(take(), byAgent, PER_LOOKUP);
  const op = merged<OpHit>(take(), byAgent, PER_LOOKUP);
  const ses = merged<SessionHit>(take(), byAgent, PER_LOOKUP);
  const byName = merged<AgentHit>(take(), (r) => [r.agentClass], PER_LOOKUP);
  const byKey = classAndName ? merged<AgentHit>(take(), byAgent, 1) : null;
  const evs = merged<EventHit & { via: EventField }>(take(), hitKey, EVENT_ROWS);
  const eventWindow = (take() as D1Result<{ n: number }>[]).reduce((a, r) => a + Number(r.results[0]?.n ?? 0), 0);

  const found = new Map<string, SearchMatch>();
  const add = (m: SearchMatch) => {
    if (!found.has(keyOf(m))) found.set(keyOf(m), m);
  };
  const own = (field: SearchField): SearchVia => ({ field, by: "id" });
  for (const r of inc) add(incidentMatch(r, own("incident")));
  for (const r of run) add(runMatch(r, own(r.kind === "chat_turn" ? "request" : r.kind === "task" ? "task" : "fiber")));
  for (const r of op) add(opMatch(r, own("op")));
  for (const r of ses) add(sessionMatch(r, own("session")));
  for (const r of byKey ?? []) add(agentMatch(r, own("agent_key")));
  for (const r of byName) add(agentMatch(r, own("agent_name")));

  // Ids that only events carry (an op that was never ambiguous, a task's or a trace's events): what do those
  // events belong to? Only when nothing has that id itself, so an id with a page of its own goes straight there.
  const hits = [...evs].sort((a, b) => compareKey(hitKey(a), hitKey(b)));
  const probes = new Map<string, { kind: "incident" | "run" | "session"; id: string; owner: AgentRef; via: SearchVia }>();
  for (const e of found.size ? [] : hits) {
    const via: SearchVia = { field: e.via, by: "event" };
    for (const t of targetsOf(e)) {
      const k = keyOf({ kind: t.kind, id: t.id, ...t.owner });
      if (!found.has(k) && !probes.has(k) && probes.size < MAX_PROBES) probes.set(k, { ...t, via });
    }
  }
  if (probes.size) {
    const list = [...probes.values()];
    // Each target lives in its agent's partition: one batch per partition that holds some.
    const rows: never[] = [];
    await Promise.all(
      store.parts.map(async (db) => {
        const mine = list.flatMap((p, i) => (partitionFor(store, p.owner.agentClass, p.owner.agentName) === db ? [i] : []));
        if (!mine.length) return;
        const checked = (await db.batch(
          mine.map((i) => {
            const p = list[i]!;
            const t = TABLE[p.kind];
            return db
              .prepare(`SELECT ${t.select} FROM ${t.table} WHERE ${t.key} = ? AND ${t.cls} = ? AND ${t.name} = ?`)
              .bind(p.id, p.owner.agentClass, p.owner.agentName);
          }),
        )) as D1Result<never>[];
        read.push(...checked);
        checked.forEach((r, j) => {
          const row = r.results[0];
          if (row) rows[mine[j]!] = row;
        });
      }),
    );
    rows.forEach((row, i) => {
      const p = list[i]!;
      if (!row) return;
      add(p.kind === "incident" ? incidentMatch(row, p.via) : p.kind === "run" ? runMatch(row, p.via) : sessionMatch(row, p.via));
    });
  }

  let prefix = false;
  if (found.size === 0 && q.length >= MIN_PREFIX_LENGTH) {
    const keyed: Keyed[] = ["incident", "run", "op", "session"];
    const r = await onEvery(store, (db) => keyed.map((k) => byPrefix(db, k, q)));
    read.push(...r.flat());
    const startOf = (field: SearchField): SearchVia => ({ field, by: "prefix" });
    for (const x of merged<IncidentHit>(r[0]!, byKeyAndAgent, PER_LOOKUP)) add(incidentMatch(x, startOf("incident")));
    for (const x of merged<RunHit>(r[1]!, byKeyAndAgent, PER_LOOKUP)) add(runMatch(x, startOf("run")));
    for (const x of merged<OpHit>(r[2]!, byKeyAndAgent, PER_LOOKUP)) add(opMatch(x, startOf("op")));
    for (const x of merged<SessionHit>(r[3]!, byKeyAndAgent, PER_LOOKUP)) add(sessionMatch(x, startOf("session")));
    prefix = found.size > 0;
  }

  const all = [...found.values()].sort((a, b) => SEARCH_KINDS.indexOf(a.kind) - SEARCH_KINDS.indexOf(b.kind));
  return {
    query: q,
    matches: all.slice(0, MAX_MATCHES),
    truncated: all.length > MAX_MATCHES,
    prefix,
    traceWindow: isTrace ? eventWindow : null,
    eventWindow,
    rowsRead: rowsReadOf(...read),
  };
}
