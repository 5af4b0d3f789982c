import type { TelemetryEvent } from "@agent-oncall/telemetry";

/**
 * The floor of D1 rows written per event for a mix: what a store that writes only what a person needs to see change
 * would still write (issue 35). Counted over the fleet's own messages, each message standing for the batch it lands
 * in (a batch holds several, so this counts a run as "still running after its batch" a little more often than a
 * batch would: the floor is, if anything, high):
 * - a run still running after the message it started in: written when seen open, and again when it ends (it leaves);
 * - failed, interrupted or exhausted work: kept for the hot window, so written once and deleted once;
 * - an incident: opened, closed, and deleted after the hot window;
 * - an op that becomes ambiguous: written, and deleted once resolved (by a person: not in the simulation);
 * - an agent's status change (running, idle, rescheduled);
 * - a per-minute rollup cell (minute, class, event type): written the first time, deleted by retention.
 * Each write costs the row and INDEX_ENTRIES index entries: one index to list it by, the least a list needs.
 */
export const INDEX_ENTRIES = 1;

const STARTS = new Set(["fiber.started", "task.accepted", "chat.turn.started"]);
const ENDS = new Set(["fiber.completed", "fiber.failed", "fiber.interrupted", "task.completed", "chat.turn.finished"]);
const KEPT = new Set(["fiber.failed", "fiber.interrupted", "chat.recovery.exhausted"]);
const OPENS = new Set(["fiber.recovery.detected", "chat.recovery.detected"]);
const CLOSES = new Set(["fiber.recovery.handled", "chat.recovery.completed", "chat.recovery.exhausted"]);

export type Floor = { events: number; writes: number; perEvent: number; byChange: Record<string, number> };

/** Counts state changes as the fleet closes each message (fleet.ts); `result()` gives the floor so far. */
export class FloorCounter {
  private events = 0;
  private readonly changes: Record<string, number> = { openRun: 0, keptWork: 0, incident: 0, ambiguousOp: 0, agentStatus: 0, rollupCell: 0 };
  /** Runs seen open past their message, by agent and run id, until their end comes. */
  private readonly open = new Set<string>();
  private readonly status = new Map<string, string>();
  private readonly cells = new Set<string>();

  /** One message's events, in order. */
  message(events: TelemetryEvent[]): void {
    this.events += events.length;
    const startedHere = new Set<string>();
    const endedHere = new Set<string>();
    for (const e of events) {
      const agent = `${e.source.agentClass}/${e.source.agentName}`;
      const run = e.corr.fiberId ?? e.corr.taskId ?? e.corr.requestId;
      const key = run ? `${agent}/${run}` : null;
      if (key && STARTS.has(e.type)) startedHere.add(key);
      let wasOpen = false;
      if (key && ENDS.has(e.type)) {
        endedHere.add(key);
        // Its end is one more write if it was written open (it leaves, or stays as kept work).
        wasOpen = this.open.delete(key);
        if (wasOpen) this.changes.openRun! += 1;
      }
      // Work kept for the hot window: written (unless its end already was), then deleted.
      if (KEPT.has(e.type)) this.changes.keptWork! += wasOpen ? 1 : 2;
      // Opened, closed, and deleted after the hot window: three writes, counted at the opening.
      if (OPENS.has(e.type)) this.changes.incident! += 2;
      if (CLOSES.has(e.type)) this.changes.incident! += 1;
      if (e.type === "op.ambiguous") this.changes.ambiguousOp! += 2;
      if (e.type.startsWith("session.status_")) {
        const s = e.type.slice("session.status_".length);
        if (this.status.get(agent) !== s) this.changes.agentStatus! += 1;
        this.status.set(agent, s);
      }
      const cell = `${Math.floor(e.time / 60_000)}/${e.source.agentClass}/${e.type}`;
      if (!this.cells.has(cell)) {
        this.cells.add(cell);
        this.changes.rollupCell! += 2;
      }
    }
    for (const key of startedHere) {
      if (endedHere.has(key)) continue;
      this.open.add(key);
      this.changes.openRun! += 1;
    }
  }

  /** The floor per event over what was counted. */
  result(): Floor {
    const rows = Object.values(this.changes).reduce((a, b) => a + b, 0);
    const writes = rows * (1 + INDEX_ENTRIES);
    return {
      events: this.events,
      writes,
      perEvent: this.events ? writes / this.events : 0,
      byChange: Object.fromEntries(Object.entries(this.changes).map(([k, v]) => [k, this.events ? (v * (1 + INDEX_ENTRIES)) / this.events : 0])),
    };
  }
}
