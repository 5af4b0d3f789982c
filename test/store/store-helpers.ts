import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { expect } from "vitest";
import type { Page, PageOptions } from "../../src/store/read-models/paging";
import { ingestBatch } from "../../worker/ingest/consumer";

/**
 * Ingests events through the real consumer path, as queue messages. Received
 * (by default) just after the batch's latest event, so fixtures with fixed
 * dates stay inside ingest's time window whenever the suite runs; a batch
 * dated in the future is received now, and refused as it would be.
 */
export async function ingest(events: TelemetryEvent[] | unknown[], now = receivedAfter(events)) {
  const { stored, deadLettered } = await ingestWithCost(events, now);
  return { stored, deadLettered };
}

/** ingest, with what it cost D1 (rows written and read). */
export function ingestWithCost(events: TelemetryEvent[] | unknown[], now = receivedAfter(events)) {
  return ingestBatch(
    env.DB,
    events.map((body, i) => ({ id: `m-${i}-${crypto.randomUUID()}`, body })),
    { now },
  );
}

function receivedAfter(events: unknown[]): number {
  const times = events.map((e) => (e as { time?: unknown } | null)?.time).filter((t): t is number => typeof t === "number" && Number.isFinite(t));
  const latest = times.length ? Math.max(...times) : Number.NaN;
  return latest <= Date.now() ? latest + 1000 : Date.now();
}

/** Ingests in batches of `size` (one D1 transaction each). */
export async function ingestIn(events: TelemetryEvent[], size = 50) {
  for (let i = 0; i < events.length; i += size) await ingest(events.slice(i, i + size));
}

/**
 * Walks every page of a list and checks the paging contract on the way:
 * no page longer than `limit`, `next` only when more may follow, no item twice.
 */
export async function walk<T>(fetch: (p: PageOptions) => Promise<Page<T>>, limit: number, keyOf: (t: T) => string, maxPages = 10_000): Promise<T[]> {
  const all: T[] = [];
  const seen = new Set<string>();
  let cursor: string | null = null;
  for (let i = 0; i < maxPages; i++) {
    const page: Page<T> = await fetch({ cursor, limit });
    expect(page.items.length).toBeLessThanOrEqual(limit);
    for (const item of page.items) {
      const k = keyOf(item);
      expect(seen.has(k), `item ${k} returned twice`).toBe(false);
      seen.add(k);
      all.push(item);
    }
    if (!page.next) return all;
    cursor = page.next;
  }
  throw new Error("too many pages");
}

/** Awaits a promise that must reject; returns the error. */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a rejection");
}

/** Sort helper: by a numeric key DESC, then a string key DESC (the lists' order). */
export function desc<T>(items: T[], a: (t: T) => number, b: (t: T) => string): T[] {
  return [...items].sort((x, y) => a(y) - a(x) || (b(y) > b(x) ? 1 : b(y) < b(x) ? -1 : 0));
}

/** Deletes every row of every store table in `db` (a partition or the home database), keeping the schema. */
export async function empty(db: D1Database): Promise<void> {
  const { results } = await db
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('d1_migrations', 'sqlite_sequence') AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'",
    )
    .all<{ name: string }>();
  await db.batch(results.map(({ name }) => db.prepare(`DELETE FROM "${name}"`)));
}
