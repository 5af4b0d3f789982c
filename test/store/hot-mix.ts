import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { expect } from "vitest";
import { ingestBatch } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";

/** A demo-like ingest mix, and what it costs D1 (test/store/hot-cost.test.ts prints it; retention measures against it). */

export const hex = (n: number) => Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * One agent's next `k` events in the demo's measured mix (26% stash, ~9% each of model.usage, op.started and
 * op.completed, the rest fiber and session life), numbered from `seq` as the outbox numbers them.
 */
function agentEvents(agentName: string, seq: number, k: number, time: number): TelemetryEvent[] {
  const fiberId = `f-${Math.floor(seq / 20)}`;
  const sessionName = agentName;
  const traceId = hex(16);
  const out: TelemetryEvent[] = [];
  for (let i = 0; i < k; i++) {
    const n = seq + i;
    const at = { agentName, time: time + i };
    const r = n % 11;
    const e =
      r === 0
        ? makeEvent("fiber.started", { fiberName: "etl" }, { ...at, corr: { fiberId, traceId, spanId: hex(8) } })
        : r <= 3
          ? makeEvent("fiber.stashed", { fiberName: "etl", snapshot: { preview: `{"step":${n}}`, bytes: 12, truncated: false } }, { ...at, corr: { fiberId } })
          : r === 4
            ? makeEvent("model.usage", { inputTokens: 120, outputTokens: 40, model: "m", turnSeq: n }, { ...at, corr: { sessionName } })
            : r === 5
              ? makeEvent("op.started", { opKind: "charge", turnSeq: n }, { ...at, corr: { sessionName, opId: `op-${n}` } })
              : r === 6
                ? makeEvent("op.completed", { opKind: "charge", turnSeq: n }, { ...at, corr: { sessionName, opId: `op-${n - 1}` } })
                : r === 7
                  ? makeEvent("session.status_running", { turnSeq: n }, { ...at, corr: { sessionName, requestId: `req-${n}` } })
                  : r === 8
                    ? makeEvent("session.status_idle", { turnSeq: n - 1 }, { ...at, corr: { sessionName, requestId: `req-${n - 1}` } })
                    : r === 9
                      ? makeEvent("fiber.completed", { fiberName: "etl" }, { ...at, corr: { fiberId } })
                      : makeEvent(
                          "fiber.stashed",
                          { fiberName: "etl", snapshot: { preview: `{"step":${n},"done":true}`, bytes: 24, truncated: false } },
                          { ...at, corr: { fiberId } },
                        );
    out.push({ ...e, seq: n });
  }
  return out;
}

/**
 * Ingests `batches` queue batches of `agents` messages each, every message a packed array of `perMessage`
 * numbered events of one agent (as the outbox packs them), and returns what D1 said it cost.
 */
export async function measureIngest(db: D1Database, opts: { agents: number; batches: number; perMessage: number; prefix: string }) {
  const size = async () => Number((await db.prepare("SELECT 1").run()).meta.size_after ?? 0);
  const before = await size();
  let events = 0,
    rowsWritten = 0,
    rowsRead = 0;
  const seqs = new Map<string, number>();
  const start = Date.now() - 3_600_000;
  for (let b = 0; b < opts.batches; b++) {
    const messages = [];
    for (let a = 0; a < opts.agents; a++) {
      const name = `${opts.prefix}-${a}`;
      const seq = seqs.get(name) ?? 1;
      seqs.set(name, seq + opts.perMessage);
      const evs = agentEvents(name, seq, opts.perMessage, start + b * 1000 + a);
      events += evs.length;
      messages.push({ id: `m-${name}-${b}`, body: JSON.stringify(evs) });
    }
    const r = await ingestBatch(db, messages, { now: start + b * 1000 + 5000 });
    expect(r.deadLettered).toBe(0);
    rowsWritten += r.rowsWritten;
    rowsRead += r.rowsRead;
  }
  const bytes = (await size()) - before;
  return { events, rowsWrittenPerEvent: rowsWritten / events, rowsReadPerEvent: rowsRead / events, bytesPerEvent: bytes / events };
}
