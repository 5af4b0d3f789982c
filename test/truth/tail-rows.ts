import { describe, expect, it } from "vitest";
import { patient } from "../patience";
import type { TailPath } from "../stream-tail";
import { type Cell, compareViews, scenarioTable } from "./compare";
import { drive, truthStub } from "./drive";
import { MATRIX, type Row, rowName } from "./matrix";
import { matrixHooks } from "./matrix-hooks";
import { consoleView, overviewFigures, sdkView, type View } from "./observe";
import { settle } from "./settle";
import { tailForm } from "./tail-form";

/**
 * The main truth matrix on tail-captured agents (issue 34): the same rows, driven by the same drivers on the truth
 * agents with the admin package alone (`withAdminRpc(Agent)`, the adoption the README recommends), their events
 * captured by the tail (tail-form.ts) and handed to the classic or the streaming handler, then the same comparison
 * with the SDK's own records. Reconciliation runs through the admin RPC as on the outbox path. Each path runs in a
 * test file of its own (tail-matrix.test.ts, tail-stream-matrix.test.ts), each in a fresh runtime.
 */

/**
 * What a lossy row keeps from the console, as the test's drivers lose it. Classic: the one trace item that carried
 * the lost events. Streaming (one flush per message): one flush per lost SDK message; `lost-end` loses the end's
 * message, `unseen` every message that names the run's life: a fiber's start and end, a Tasks run's acceptance, its
 * attempt's start and its end (its steps' messages still arrive).
 */
function lostInTransport(path: TailPath, row: Row): number {
  if (row.fault !== "lost-end" && row.fault !== "unseen") return 0;
  if (path === "classic") return 1;
  if (row.fault === "lost-end") return 1;
  return row.primitive === "task" ? 3 : 2;
}

/**
 * What the console must show on the tail path where it cannot know what the SDK records, written from the SDK's view
 * (sdkView) and never from the console's; every other field is held to the SDK's record as on the outbox path.
 */
function onTheTail(path: TailPath, row: Row, sdk: View): View {
  return withoutHelperFacts(path, row, knowable(path, row, sdk));
}

/**
 * Facts only the outbox helper reports read absent or unknown on the tail path, never 0: no stash reached the
 * console (`stash()` publishes nothing), and the agent's events are unnumbered, so it is not on the "events
 * missing" list and what is missing is unknown (null), not none.
 */
function withoutHelperFacts(path: TailPath, row: Row, sdk: View): View {
  if (path === "classic" && row.fault === "lost-end") return sdk; // the console never heard of the agent
  const runs = Object.fromEntries(Object.entries(sdk.runs).map(([id, r]) => [id, r.status === "(not shown)" ? r : { ...r, snapshot: null }]));
  return { ...sdk, runs, numbering: { highest: null, onGapsList: false } };
}

function knowable(path: TailPath, row: Row, sdk: View): View {
  // On the streaming tail the run's start left in a flush of its own and arrived: the console knows the agent and
  // the run, and its reconciliation asks the SDK, so it must show what the SDK records (the rule below still holds).
  if (path === "classic" && row.fault === "lost-end") {
    // The work starts and ends in one call: the dropped trace item held its whole life, and the agent's only events.
    // The console never heard of the agent, so no reconciliation asks it: it shows nothing, and nothing false.
    return {
      runs: Object.fromEntries(Object.keys(sdk.runs).map((id) => [id, { status: "(not shown)" }])),
      incidents: {},
      agentStatus: "(unanswered)",
      listed: [],
      overview: { running: 0, openIncidents: 0 },
      openIncidentRows: 0,
    };
  }
  if (row.primitive === "runFiber" && (row.fault === "abort" || row.fault === "evictions")) {
    // The agent's hook finishes the work itself and starts no new run (its own record says "recovered"): the SDK's
    // messages read the same as a hook that dropped it, and the admin RPC's run record keeps no word for it, so the
    // console says it does not know (and closes the incident as ended, not reported), never "recovered" nor "failed".
    const runs = Object.fromEntries(
      Object.entries(sdk.runs).map(([id, r]) => [id, { ...r, status: JSON.stringify(r.status).includes("recovered") ? "unknown" : r.status }]),
    );
    const incidents = Object.fromEntries(
      Object.entries(sdk.incidents).map(([id, i]) => [id, i?.status === "recovered" ? { ...i, status: "ended_unreported" } : i]),
    );
    return { ...sdk, runs, incidents };
  }
  return sdk;
}

/** The main matrix's rows on the given tail path, with the matrix table printed after them. */
export function tailMatrix(path: TailPath): void {
  const form = tailForm(path);
  const results: { name: string; cells: Cell[] }[] = [];
  const label = path === "classic" ? "tail" : "stream";

  matrixHooks(() => form.stop(), results);

  describe(`truth matrix on the ${path} tail: the console shows what the SDK records`, () => {
    for (const row of MATRIX) {
      const name = `${label}: ${rowName(row)}`;
      it(name, { timeout: patient(60_000) }, async () => {
        const before = await overviewFigures();
        const dropped = form.dropped;
        const subject = await drive(row, form);
        // A lossy row lost what it meant to, and nothing else was lost.
        expect(form.dropped - dropped).toBe(lostInTransport(path, row));
        await settle(subject);
        const sdk = onTheTail(path, row, await sdkView(subject));
        const shown = await consoleView(subject, sdk, before);
        const cells = compareViews(sdk, shown);
        results.push({ name, cells });
        await (await truthStub(subject.agentClass, subject.agentName)).retire().catch(() => {});
        const bad = cells.filter((c) => c.verdict === "DISAGREE");
        const acted = subject.action ? `\n${subject.action.name} answered: ${JSON.stringify(subject.action.result).slice(0, 1500)}` : "";
        expect(bad, scenarioTable(name, cells) + acted).toEqual([]);
      });
    }
  });
}
