import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { MAX_EVENT_BYTES, newEventId, utf8Length } from "@agent-oncall/telemetry";
import { sendPacked } from "@agent-oncall/telemetry/pack";
import { fitEvent } from "@agent-oncall/telemetry/too-large";
import { describe, expect, it } from "vitest";
import { makeEvent } from "../fixtures/events";
import { pollRows, probe, rejectionOf } from "../helpers";

type Row = { id: string; type: string; payload: string };
const rowsOf = (agentName: string, n: number) =>
  pollRows<Row>("SELECT id, type, payload FROM events WHERE agent_name = ? ORDER BY id", [agentName], (r) => r.length === n);

describe("events too large for the Queue", () => {
  it("a 2 MB event reaches D1 as an event.too_large placeholder with its ids, counted in stats, and the agent's other events still go", async () => {
    const { name, stub } = await probe();
    const big = await stub.recordEvent(
      "session.error",
      { turnSeq: 3, error: `token=sk-live_abcdefghijklmnopqrstuvwxyz1234 ${"x".repeat(2_000_000)}` },
      { sessionName: name, incidentId: `turn:ProbeAgent/${name}/3` },
    );
    const small = await stub.recordEvent("session.status_idle", { turnSeq: 3 }, { sessionName: name });
    const stats = await stub.settleTelemetry();
    expect(stats).toMatchObject({ tooLarge: 1, sendErrors: 0, pending: 0 });

    const rows = await rowsOf(name, 2);
    const placeholder = rows.find((r) => r.id === big)!;
    expect(placeholder.type).toBe("event.too_large");
    const p = JSON.parse(placeholder.payload);
    expect(p).toMatchObject({ originalType: "session.error", limit: MAX_EVENT_BYTES, preview: { truncated: true } });
    expect(p.bytes).toBeGreaterThan(2_000_000);
    expect(p.preview.preview).not.toContain("sk-live_");
    expect(placeholder.payload.length).toBeLessThan(2000);
    expect(rows.find((r) => r.id === small)!.type).toBe("session.status_idle");
    // Its correlation ids survive: the turn's incident timeline shows that something too large happened.
    const inc = await env.DB.prepare("SELECT timeline_id, session_name FROM events WHERE id = ?").bind(big).first();
    expect(inc).toEqual({ timeline_id: `turn:ProbeAgent/${name}/3`, session_name: name });
  });

  it("an outbox row over the limit, left by an older version, is sent as a placeholder instead of failing every send", async () => {
    const { name, stub } = await probe();
    await stub.recordEvent("session.status_running", { turnSeq: 1 }, { sessionName: name });
    await stub.settleTelemetry();
    const legacy = { ...makeEvent("session.status_idle", { turnSeq: 1, detail: "€".repeat(60_000) }, { agentName: name, time: Date.now() }), id: newEventId() };
    // As the older version stored it (one event per row, keyed by its number), found by the agent's next wake.
    await runInDurableObject(stub, async (_agent, state) => {
      state.storage.sql.exec("CREATE TABLE cf_telemetry_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, body TEXT NOT NULL)");
      state.storage.sql.exec("INSERT INTO cf_telemetry_outbox (seq, id, body) VALUES (2, ?, ?)", legacy.id, JSON.stringify(legacy));
    });
    await rejectionOf(stub.evict());
    const again = (await probe(name)).stub;
    const after = await again.recordEvent("session.status_idle", { turnSeq: 1 }, { sessionName: name });
    const stats = await again.settleTelemetry();
    expect(stats).toMatchObject({ tooLarge: 1, sendErrors: 0, pending: 0 });
    const rows = await rowsOf(name, 3);
    expect(rows.find((r) => r.id === legacy.id)).toMatchObject({ type: "event.too_large" });
    expect(JSON.parse(rows.find((r) => r.id === legacy.id)!.payload)).toMatchObject({
      originalType: "session.status_idle",
      bytes: utf8Length(JSON.stringify(legacy)),
    });
    expect(rows.map((r) => r.id)).toContain(after);
  });

  it("packs messages by UTF-8 bytes, so non-Latin text never makes a message the Queue refuses", async () => {
    const agentName = `bytes-${crypto.randomUUID().slice(0, 8)}`;
    // 16,000 "€" are 16,000 characters but 48,000 bytes: three to a 60,000-character message would be 144 KB.
    const bodies = Array.from({ length: 6 }, (_, i) =>
      JSON.stringify(
        makeEvent("fiber.failed", { fiberName: "etl", error: "€".repeat(16_000) }, { agentName, time: Date.now() - i, corr: { fiberId: `f-${i}` } }),
      ),
    );
    // The Queue refuses such a message (in production with "Unknown Internal Error").
    expect(await rejectionOf(env.TELEMETRY_QUEUE.send(`[${bodies.slice(0, 3).join(",")}]`, { contentType: "text" }))).toBeInstanceOf(Error);
    await sendPacked(env.TELEMETRY_QUEUE, bodies);
    const rows = await rowsOf(agentName, 6);
    // Ingest caps the error (free text) with a marker; the event itself is stored.
    expect(JSON.parse(rows[0]!.payload).error).toMatch(/^€{4000}… \[cut at ingest: 12000 more chars\]$/);
  });

  it("leaves an event that fits untouched, and keeps id, time, source and correlation in the placeholder", () => {
    const small = makeEvent("op.ambiguous", { opKind: "charge", detail: "ok" }, { corr: { opId: "o-1", sessionName: "s" } });
    expect(fitEvent(small)).toBe(small);
    const big = makeEvent(
      "fiber.stashed",
      { fiberName: "etl", snapshot: { preview: "€".repeat(30_000), bytes: 90_000, truncated: false } },
      { corr: { fiberId: "f-1" } },
    );
    const placeholder = fitEvent(big);
    expect(placeholder).toMatchObject({
      id: big.id,
      time: big.time,
      source: big.source,
      corr: big.corr,
      type: "event.too_large",
      payload: { originalType: "fiber.stashed" },
    });
    expect(utf8Length(JSON.stringify(placeholder))).toBeLessThan(4000);
  });
});
