import { env } from "cloudflare:workers";
import { SCHEMA_VERSION, type TelemetryEvent } from "@agent-oncall/telemetry";
import { expect, it } from "vitest";
import { tableStatements } from "../../worker/ingest/projections";
import { toRows } from "../../worker/ingest/rows";
import { makeEvent } from "../fixtures/events";
import { ingest } from "../store/store-helpers";

const uid = () => crypto.randomUUID().slice(0, 8);

/** D1's rows written per table for one ingest batch, as ingest runs it (one db.batch). */
async function written(events: TelemetryEvent[]): Promise<Record<string, number>> {
  const rows = toRows(events, Date.now());
  const stmts = tableStatements(env.DB, rows.events, rows.projections, rows.rollups);
  const results = await env.DB.batch(stmts.map((s) => s.stmt));
  const out: Record<string, number> = {};
  stmts.forEach((s, i) => {
    out[s.table] = (out[s.table] ?? 0) + (results[i]!.meta.rows_written ?? 0);
  });
  return out;
}

it("a pause, each held-back recovery and a resume write one recovery_pauses row each, and nothing else beyond any event's rows", async () => {
  const agentName = `pause-cost-${uid()}`;
  const at = Date.now();
  const pause = makeEvent("recovery.paused", { actor: "oncall@example.com", reason: "storm", until: at + 3_600_000 }, { agentName });
  const skip = makeEvent("recovery.skipped_paused", { kind: "fiber", fiberName: "import" }, { agentName, corr: { fiberId: "f1" } });
  const resume = makeEvent("recovery.resumed", { actor: "oncall@example.com", reason: "fixed", recovered: ["f1"] }, { agentName });
  const figures = { paused: await written([pause]), skipped: await written([skip]), resumed: await written([resume]) };
  console.log(`[recovery-pause cost] rows written per table: ${JSON.stringify(figures)}`);
  // The insert counts the row and its primary-key index entry; later events update it in place.
  expect(figures.paused.recovery_pauses).toBe(2);
  expect(figures.skipped.recovery_pauses).toBe(1);
  expect(figures.resumed.recovery_pauses).toBe(1);
  const row = await env.DB.prepare("SELECT pause_state, skipped, paused_until FROM recovery_pauses WHERE agent_name = ?").bind(agentName).first();
  expect(row).toEqual({ pause_state: "resumed", skipped: 1, paused_until: null });
});

it("ingest accepts events of schema version 1 (agents on the older package) and 2, and dead-letters any other", async () => {
  const agentName = `schema-${uid()}`;
  const e = (v: number) => ({ ...makeEvent("session.status_idle", {}, { agentName }), v });
  expect(SCHEMA_VERSION).toBe(2);
  expect(await ingest([e(1), e(2)])).toEqual({ stored: 2, deadLettered: 0 });
  expect(await ingest([e(3)])).toEqual({ stored: 0, deadLettered: 1 });
});
