import { TRUNCATED_REASON, UNREADABLE_PREFIX } from "@agent-oncall/telemetry/contract";
import { z } from "zod";
import { deadLetters } from "../schema";
import { names } from "../sql-names";
import { instant, oneOf, parseFilters, sinceBeforeUntil } from "./filters";
import { cond, keysetPage, type ListOrder, type Page, type PageOptions, rowsReadOf } from "./paging";

/**
 * Dead letters: what never became an event in the store, each with why. The kind of loss is read from the reason its
 * writer gave (one fixed text or prefix per writer, named here), so no column or index is added: dead letters are
 * few, and the lists and counts scan dead_letters_received (received_at, message_id) newest first.
 */

/**
 * The kinds of loss, by who wrote the letter: the runtime cut an invocation's diagnostics short (truncated), the tail
 * could not read a message (unreadable), the telemetry Queue refused the tail's send (refused), the Queue gave up
 * delivering a message after its retries (undelivered), or ingest refused the event (ingest: invalid, unsigned, out of
 * its time window). Every dead letter is exactly one of them.
 */
export const LOSS_KINDS = ["truncated", "unreadable", "refused", "undelivered", "ingest"] as const;
export type LossKind = (typeof LOSS_KINDS)[number];

/** The reason worker/tail.ts gives each captured event the telemetry Queue refused (tail events are not retried). */
export const QUEUE_REFUSED_REASON = "captured from the tail, but the telemetry Queue refused it";
/** How the reason of a message the dead-letter Queue received begins (worker/ingest/consumer.ts). */
export const UNDELIVERED_PREFIX = "delivery failed after ";

const D = names(deadLetters);
/** LIKE's wildcards in a prefix, escaped (with ESCAPE '\'). */
const likePrefix = (p: string) => `${p.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
const quoted = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** The kind of a dead letter, as SQL over its reason: the one place the reasons are read. */
export const LOSS_KIND_SQL = `CASE
  WHEN ${D.reason} = ${quoted(TRUNCATED_REASON)} THEN 'truncated'
  WHEN ${D.reason} LIKE ${quoted(likePrefix(UNREADABLE_PREFIX))} ESCAPE '\\' THEN 'unreadable'
  WHEN ${D.reason} = ${quoted(QUEUE_REFUSED_REASON)} THEN 'refused'
  WHEN ${D.reason} LIKE ${quoted(likePrefix(UNDELIVERED_PREFIX))} ESCAPE '\\' THEN 'undelivered'
  ELSE 'ingest' END`;

/** Dead letter list filters: the kind of loss, and since / until bounding when the console received it (inclusive). */
export const deadLetterFilters = z.object({ kind: oneOf("kind", LOSS_KINDS), since: instant("since"), until: instant("until") }).superRefine(sinceBeforeUntil);

/** A dead letter as the list shows it. Its body (the message as it arrived, which may hold the agent's data) is not listed. */
export type DeadLetterRow = { messageId: string; receivedAt: number; kind: LossKind; reason: string; eventType: string | null };

export const DEAD_LETTER_ORDER: ListOrder<DeadLetterRow> = { tag: "dead-letters", keyOf: (r) => [r.receivedAt, r.messageId] };

/**
 * Dead letters, newest first, keyset-paginated over dead_letters_received; `kind` is tested per row (a scan bounded
 * by SCAN_BUDGET: a page can come back short with a `next` that continues).
 */
export async function listDeadLetters(
  db: D1Database,
  filters: { kind?: unknown; since?: unknown; until?: unknown },
  page: PageOptions = {},
): Promise<Page<DeadLetterRow>> {
  const f = parseFilters(deadLetterFilters, filters);
  return keysetPage<DeadLetterRow>(
    db,
    {
      ...DEAD_LETTER_ORDER,
      table: D.$table,
      index: "dead_letters_received",
      select: `${D.messageId} AS messageId, ${D.receivedAt} AS receivedAt, ${LOSS_KIND_SQL} AS kind, ${D.reason} AS reason, ${D.eventType} AS eventType`,
      order: [D.receivedAt, D.messageId],
      types: ["number", "string"],
      dir: "DESC",
      where: [],
      residual: f.kind ? [cond(`(${LOSS_KIND_SQL}) = ?`, f.kind)] : [],
      range: { min: f.since, max: f.until },
    },
    page,
  );
}

/** Dead letters received since a time, by kind, counted among the newest `window` + 1 (`capped` when there were more). */
export type LossCounts = { byKind: Record<LossKind, number>; capped: boolean; rowsRead: number };

/** How many dead letters the count looks at, newest first: a bounded read whatever the backlog. */
export const LOSS_COUNT_WINDOW = 1000;

/**
 * The dead letters received at or after `since`, by kind: one scan of dead_letters_received from now back to `since`,
 * at most `window` + 1 rows. Each count is what listDeadLetters({ kind, since }) lists, unless `capped`.
 */
export function lossCountStatement(db: D1Database, since: number, window = LOSS_COUNT_WINDOW): D1PreparedStatement {
  return db
    .prepare(
      `SELECT kind, COUNT(*) AS n FROM (SELECT ${LOSS_KIND_SQL} AS kind FROM ${D.$table} INDEXED BY dead_letters_received
         WHERE ${D.receivedAt} >= ? ORDER BY ${D.receivedAt} DESC, ${D.messageId} DESC LIMIT ?) GROUP BY kind`,
    )
    .bind(since, window + 1);
}

/** Reads lossCountStatement's result: counts past `window` are cut to the newest `window` and flagged. */
export function lossCountsOf(r: D1Result<{ kind: string; n: number }>, window = LOSS_COUNT_WINDOW): LossCounts {
  const byKind = Object.fromEntries(LOSS_KINDS.map((k) => [k, 0])) as Record<LossKind, number>;
  for (const row of r.results) if ((LOSS_KINDS as readonly string[]).includes(row.kind)) byKind[row.kind as LossKind] = Number(row.n);
  const total = Object.values(byKind).reduce((a, n) => a + n, 0);
  return { byKind, capped: total > window, rowsRead: rowsReadOf(r) };
}
