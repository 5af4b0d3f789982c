import { captureFromTail, sendPackedEvents, type TailItem } from "@agent-oncall/telemetry/tail";
import { QUEUE_REFUSED_REASON } from "../src/store/read-models/dead-letters";
import { agentNamespace, allowedAgentClasses } from "./admin-client";
import { consoleConfig } from "./config";
import type { Env } from "./env";
import { type DeadLetter, deadLetterStatements } from "./ingest/dead-letters";
import { findFacetParents, noFacetParents } from "./ingest/facet-parents";
import { verificationKey } from "./ingest/signature";
import { markRecorded, tailObjectStatements } from "./ingest/tail-objects";
import { storeFromEnv } from "./store";

/** What one tail invocation did: for the log line, the bench and the tests. */
export type TailResult = {
  items: number;
  read: number;
  noise: number;
  viaOutbox: number;
  sent: number;
  losses: number;
  sendFailed: number;
  /** Alarm invocations in which the SDK published nothing (keepAlive heartbeats among them): recorded, not events. */
  silentWakes: number;
  /** Candidate parents tried for sub-agents of unknown ancestry (0 when every finding was already known). */
  parentsTried: number;
  /** Rows the tail_objects statement wrote (D1's count, index entries included): once per new object or finding. */
  objectRowsWritten: number;
};

/**
 * The console as a Tail Worker of its agents' Workers: `"tail_consumers": [{ "service": "<this console>" }]` in
 * their config is the whole adoption for observing. The SDK's diagnostics messages become contract events
 * (src/telemetry/tail.ts) and go through the telemetry Queue, so ingest, idempotency, redaction, dead letters and
 * the R2 history stay one path. What cannot be read, what the runtime cut short, and events the Queue refused are
 * written to dead letters with their reason (tail events are not retried by the platform): none is lost silently.
 */
export async function handleTail(items: readonly TailItem[], env: Env): Promise<TailResult> {
  const store = storeFromEnv(env);
  // Sub-agents whose Worker publishes no ancestry: their parent, matched by the facet's object id.
  const classes = allowedAgentClasses(env);
  const namespaceOf = (c: string) => agentNamespace(env, classes, c);
  // A store that cannot answer must not cost the item: its sub-agents then go unmatched (keyed apart, see there).
  const facets = await findFacetParents(items, store, classes, namespaceOf, Date.now()).catch((e: unknown) => {
    console.error(`[tail] could not match sub-agents to their parents: ${e instanceof Error ? e.message : String(e)}`);
    return noFacetParents(namespaceOf);
  });
  // Agents that are not the bound Worker's are keyed apart by class (src/telemetry/workers.ts), so never merged.
  const capture = captureFromTail(items, { parents: facets.parents, classKeys: facets.classKeys });
  const result: TailResult = {
    items: items.length,
    read: capture.read,
    noise: capture.noise,
    viaOutbox: capture.viaOutbox,
    sent: 0,
    losses: capture.losses.length,
    sendFailed: 0,
    silentWakes: capture.silentWakes.length,
    parentsTried: facets.tried,
    objectRowsWritten: 0,
  };
  const letters: DeadLetter[] = capture.losses.map((l) => ({ messageId: l.key, reason: l.reason, eventType: null, body: l.body }));
  if (capture.events.length) {
    // Signed mode: the console signs what it captured itself, with the secret ingest verifies against.
    const key = await verificationKey(consoleConfig(env).ingest.signingSecret ?? undefined);
    const sent = await sendPackedEvents(env.TELEMETRY_QUEUE, capture.events, key).then(
      () => true,
      (e: unknown) => {
        console.error(`[tail] the telemetry Queue refused ${capture.events.length} events: ${e instanceof Error ? e.message : String(e)}`);
        return false;
      },
    );
    if (sent) result.sent = capture.events.length;
    else {
      // Kept, not lost: each event as a dead letter, with why it is there.
      result.sendFailed = capture.events.length;
      for (const e of capture.events) letters.push({ messageId: e.id, reason: QUEUE_REFUSED_REASON, eventType: e.type, body: JSON.stringify(e) });
    }
  }
  const db = store.parts[0]!;
  // Not events: what the trace items themselves say (which agent an object is, its alarms that published nothing).
  // Written here, in the home database, because only the tail handler sees them.
  const objects = capture.objects.map((o) => ({ ...o, ...facets.stored(o) }));
  const recorded = tailObjectStatements(db, objects, capture.silentWakes, Date.now());
  // The objects' statement first, so its rows written are the batch's first result.
  const statements = [recorded.objects, recorded.wakes].filter((s): s is D1PreparedStatement => s !== null);
  if (letters.length) statements.push(...deadLetterStatements(db, letters, Date.now()));
  if (statements.length) {
    const results = await db.batch(statements);
    markRecorded(objects);
    if (recorded.objects) result.objectRowsWritten = results[0]?.meta.rows_written ?? 0;
  }
  return result;
}
