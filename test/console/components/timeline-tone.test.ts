import { EVENT_REGISTRY, type EventEntry } from "@agent-oncall/telemetry";
import { jsx } from "hono/jsx";
import { describe, expect, it } from "vitest";
import { Timeline } from "../../../console/components/timeline";
import type { EventRow } from "../../../src/store/read-models";

// A timeline marks each event by how it reads (bad, warn, ok), as the event type's registry entry declares: an
// on-call person scans the red ones first. A type the console does not know is shown, unmarked.

const row = (type: string, payload: unknown = {}): EventRow => ({
  id: `e-${type}`,
  time: 1_700_000_000_000,
  type,
  agentClass: "A",
  agentName: "a",
  fiberId: null,
  incidentId: null,
  requestId: null,
  opId: null,
  sessionName: null,
  taskId: null,
  traceId: null,
  spanId: null,
  payload,
});

async function classOf(e: EventRow): Promise<string | undefined> {
  const html = String(await jsx(Timeline, { events: [e], traceUrl: null }).toString());
  return /<li class="([^"]*)" data-type=/.exec(html)?.[1] ?? (/<li data-type=/.test(html) ? "" : undefined);
}

describe("timeline tone", () => {
  it("marks every event type with its registry entry's tone, and leaves neutral and unknown types unmarked", async () => {
    for (const [type, entry] of Object.entries(EVENT_REGISTRY) as [string, EventEntry][]) {
      expect(await classOf(row(type)), type).toBe(entry.tone ?? "");
    }
    expect(await classOf(row("brand.new.type"))).toBe("");
  });

  it("does not call a managed fiber's handled recovery good news unless the SDK records it completed", async () => {
    expect(await classOf(row("fiber.recovery.handled", { fiberName: "f", fiberStatus: "interrupted" }))).toBe("warn");
    expect(await classOf(row("fiber.recovery.handled", { fiberName: "f", fiberStatus: "completed" }))).toBe("ok");
  });
});
