import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { hex, measureIngest } from "./hot-mix";

// What the hot store costs per event on a demo-like mix: rows written (every index entry counts, from D1's meta)
// and bytes (the database's size_after, so pages and indexes count). Printed as a bench line; the bounds that are
// behaviour are asserted.

describe("the hot store's cost per event", () => {
  it("prints rows written and bytes per event on a demo-like mix (8 agents, 6 events per message, ~48 per batch)", async () => {
    const prefix = `cost-${hex(3)}`;
    const m = await measureIngest(env.DB, { agents: 8, batches: 60, perMessage: 6, prefix });
    const seg = (await env.DB.prepare("SELECT COUNT(*) AS segments, SUM(n) AS events FROM event_segments WHERE agent_name LIKE ?")
      .bind(`${prefix}-%`)
      .first<{ segments: number; events: number }>())!;
    console.log(
      `[hot-cost] ${m.events} events: ${m.rowsWrittenPerEvent.toFixed(2)} D1 rows written/event, ${m.rowsReadPerEvent.toFixed(2)} rows read/event, ${Math.round(m.bytesPerEvent)} bytes/event; ` +
        `timeline: ${seg.segments} segments = ${((3 * seg.segments) / m.events).toFixed(2)} rows written/event (row + primary key + time index)`,
    );
    expect(m.events).toBe(8 * 60 * 6);
    // Every event stored once, and each message's contiguous run is one segment (never one row per event).
    expect(seg.events).toBe(m.events);
    expect(seg.segments).toBeLessThanOrEqual(8 * 60);
  });

  it("a run of 40 numbered events in one message is one segment, like a run of 1", async () => {
    const prefix = `seg-${hex(3)}`;
    const first = await measureIngest(env.DB, { agents: 1, batches: 1, perMessage: 40, prefix });
    const one = await measureIngest(env.DB, { agents: 1, batches: 1, perMessage: 1, prefix: `${prefix}-b` });
    // 40 events and 1 event: the same segment cost; the difference is in the projections they move.
    expect(first.events).toBe(40);
    const n = (await env.DB.prepare("SELECT COUNT(*) AS n FROM event_segments WHERE agent_name IN (?, ?)")
      .bind(`${prefix}-0`, `${prefix}-b-0`)
      .first<{ n: number }>())!.n;
    expect(n).toBe(2);
    expect(one.events).toBe(1);
  });
});
