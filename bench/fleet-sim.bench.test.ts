import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { z } from "zod";
import { before, record } from "./recorded";
import { report } from "./report";
import { parseMix } from "./sim/mix";
import { type SimReport, simInputSchema, simulate, TARGETS } from "./sim/simulate";

/**
 * The fleet simulator, small, inside `npm run bench`, once per fleet shape and capture (settings in
 * vitest.bench.config.ts: the demo, quiet and busy mixes, on the classic and the streaming tail): the same lines as
 * `npm run simulate`, with targets, then side by side. The first (demo, classic) run's figures are the ones recorded
 * for a later "before".
 */
const inputs = z.array(simInputSchema).parse(JSON.parse((env as unknown as { SIM_INPUTS: string }).SIM_INPUTS));
const reports: SimReport[] = [];

for (const [k, input] of inputs.entries()) {
  const name = `${parseMix(input.mix, input.mixFile).name} ${input.capture ?? parseMix(input.mix, input.mixFile).capture}`;
  it(`fleet simulator, ${name} mix: ${input.agents} agents for ${input.seconds} s through the real Queue consumer`, async () => {
    const print = (line: string) => report(`sim ${name}: ${line}`);
    const r = await simulate(env, input, { print, pages: false, targets: true, ...(k === 0 ? { figures: { before, record } } : {}) });
    expect(r.load.stored, "every event sent is stored").toBe(r.load.events);
    expect(r.load.d1.rowsWritten).toBeGreaterThan(0);
    reports.push(r);
  });
}

it("fleet simulator: the mixes side by side, with issue 35's targets and each mix's floor", () => {
  expect(reports.length, "every mix ran").toBe(inputs.length);
  for (const line of sideBySide(reports)) report(`sim mixes: ${line}`);
  for (const line of byShape(reports)) report(`sim shapes: ${line}`);
});

const f = (n: number, d = 2) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const usd = (n: number) => `$${f(n)}`;
const met = (ok: boolean) => (ok ? "met" : "MISSED");

/** One line per figure, a column per mix, each with its target (and whether each mix meets it). */
function sideBySide(rs: SimReport[]): string[] {
  const cols = (fn: (r: SimReport) => string) => rs.map((r) => `${r.mix.name} ${r.mix.capture} ${fn(r)}`).join(" | ");
  const allMet = (ok: (r: SimReport) => boolean) => `${rs.filter(ok).length} of ${rs.length} mixes met`;
  return [
    `capture path: ${cols((r) => `${r.mix.capture}, ${f(r.load.events / Math.max(1, r.load.messages))} events/message, ${f(r.per.tailInvocations)} tail invocations/event`)}`,
    `D1 rows written per event, retention's deletes and index entries included (target <= ${f(TARGETS.allInRowsPerEvent, 1)}): ` +
      `${cols((r) => `${f(r.per.d1RowsWritten)} ${met(r.per.d1RowsWritten <= TARGETS.allInRowsPerEvent)} (floor ${f(r.load.floor.perEvent)})`)}; ${allMet((r) => r.per.d1RowsWritten <= TARGETS.allInRowsPerEvent)}`,
    `cost per million events, all in (target <= ${usd(TARGETS.costPerMillion)}, next mark ${usd(TARGETS.costPerMillionNext)}): ` +
      `${cols((r) => `${usd(r.costPerMillion)} ${met(r.costPerMillion <= TARGETS.costPerMillion)} (D1 ${usd(r.cost.d1 + r.cost.d1Storage)}, Queues ${usd(r.cost.queues)}, R2 ${usd(r.cost.r2)}, tail ${usd(r.cost.tail)}, agent side ${usd(r.cost.agentSide)})`)}; ` +
      `${allMet((r) => r.costPerMillion <= TARGETS.costPerMillion)}; next mark: ${allMet((r) => r.costPerMillion <= TARGETS.costPerMillionNext)}`,
    `+ silent wakes (keepAlive heartbeats, the mix's awake.keepAliveShare): ${cols((r) => `${f(r.mix.awake.keepAliveShare * 100, 0)}% of agents: +${f(r.awakeAdds.silentWakes.rows, 3)} rows/event, +${usd(r.awakeAdds.silentWakes.usd)}/M`)}`,
    `+ alarm loop firings (the mix's awake.alarmLoopShare): ${cols((r) => `${f(r.mix.awake.alarmLoopShare * 100, 0)}% of agents every ${f(r.mix.awake.alarmLoopSeconds, 0)} s: +${f(r.awakeAdds.alarmFirings.rows, 3)} rows/event, +${usd(r.awakeAdds.alarmFirings.usd)}/M`)}`,
    `lag p99 (target <= ${TARGETS.lagP99Ms / 1000} s): ${cols((r) => `${f(r.lagP99 / 1000)} s ${met(r.lagP99 <= TARGETS.lagP99Ms)}`)}`,
    `lag p99 split (publish -> sent to the Queue: the capture path's; sent -> stored: the console's): ${cols((r) => `${f(r.lagSplit.toSendP99 / 1000)} s + ${f(r.lagSplit.toStoreP99 / 1000)} s`)}`,
    `run: ${cols((r) => `${r.load.stored} events, ${r.load.batches} batches${r.short ? " (too short to project a month: no monthly bill)" : ""}`)}; the Workers Paid base fee ($5/month) is in monthly bills only`,
  ];
}

/** Issue 35's three store targets together. */
const meetsAll = (r: SimReport) =>
  r.per.d1RowsWritten <= TARGETS.allInRowsPerEvent && r.costPerMillion <= TARGETS.costPerMillion && r.lagP99 <= TARGETS.lagP99Ms;

/** Per fleet shape: which captures meet all three targets (rows, cost, lag) at once, and which miss what. */
function byShape(rs: SimReport[]): string[] {
  const shapes = [...new Set(rs.map((r) => r.mix.name))];
  return shapes.map((name) => {
    const of = rs.filter((r) => r.mix.name === name);
    const misses = (r: SimReport) =>
      [
        r.per.d1RowsWritten > TARGETS.allInRowsPerEvent ? `rows ${f(r.per.d1RowsWritten)}` : "",
        r.costPerMillion > TARGETS.costPerMillion ? `cost ${usd(r.costPerMillion)}` : "",
        r.lagP99 > TARGETS.lagP99Ms ? `lag ${f(r.lagP99 / 1000)} s` : "",
      ]
        .filter(Boolean)
        .join(", ");
    const met = of.filter(meetsAll).map((r) => r.mix.capture);
    return `${name}: all three targets (rows <= ${f(TARGETS.allInRowsPerEvent, 1)}, <= ${usd(TARGETS.costPerMillion)}, lag p99 <= ${TARGETS.lagP99Ms / 1000} s) met on ${met.length ? met.join(" and ") : "no capture"}; ${of.map((r) => `${r.mix.capture}: ${misses(r) || "all met"}`).join("; ")}`;
  });
}
