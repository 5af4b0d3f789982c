import { env } from "cloudflare:workers";
import { type TelemetryEvent, utf8Length } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { groupIncidents, listDeploys, listIncidents, versionFigures } from "../../src/store/read-models";
import { stormsOf } from "../../src/store/read-models/deploys";
import { ingestBatch } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";
import { FIXTURE_VERSION_A, FIXTURE_VERSION_B } from "../fixtures/versioned-agents";
import { pollRows } from "../helpers";

// Deploys on real agents: the envelope carries each agent's Worker version (a configured value, or the version
// metadata binding's id), ingest keeps the version each incident opened under, and the read models group
// incidents, exhaustions and re-spent tokens by it. Expected figures are computed from the events the agents
// shipped, never written down.

const uid = () => crypto.randomUUID().slice(0, 8);
const asMessages = (events: unknown[]) => events.map((body) => ({ id: `m-${crypto.randomUUID()}`, body }));
type IncidentVersion = { incident_id: string; agent_name: string; status: string; version: string | null; respent: number };
const INCIDENTS =
  "SELECT incident_id, agent_name, status, version, respent_input_tokens + respent_output_tokens AS respent FROM incidents WHERE agent_name IN (?, ?) ORDER BY incident_id";

/** What a version's figures should move by, from the events themselves. */
function expectedFrom(events: TelemetryEvent[]) {
  const incidents = new Set(events.filter((e) => e.corr.incidentId).map((e) => e.corr.incidentId));
  const exhausted = new Set(events.filter((e) => e.type === "chat.recovery.exhausted").map((e) => e.corr.incidentId));
  const tokens = events
    .filter((e): e is TelemetryEvent<"model.usage"> => e.type === "model.usage" && Boolean(e.corr.incidentId))
    .reduce((s, e) => s + e.payload.inputTokens + e.payload.outputTokens, 0);
  return { incidents: incidents.size, exhausted: exhausted.size, respentTokens: tokens };
}

describe("deploys", () => {
  it("every event carries its agent's Worker version, and incidents, exhaustions and re-spent tokens group by it", async () => {
    const [nameA, nameB] = [`ver-a-${uid()}`, `ver-b-${uid()}`];
    const before = (await versionFigures(env.DB, [FIXTURE_VERSION_A, FIXTURE_VERSION_B])).figures;

    const a = await getAgentByName(env.VersionedAgentA, nameA);
    const b = await getAgentByName(env.VersionedAgentB, nameB);
    const tokens = (n: number) => Array.from({ length: n }, (_, i) => ({ inputTokens: 10 * (i + 1), outputTokens: i + 1 }));
    const eventsA = [
      ...(await a.recover({ incidentId: `inc-${nameA}-1`, attempts: 3, exhausted: true, tokens: tokens(3) })),
      ...(await a.recover({ incidentId: `inc-${nameA}-2`, attempts: 1, exhausted: false, tokens: tokens(1) })),
    ];
    const eventsB = await b.recover({ incidentId: `inc-${nameB}-1`, attempts: 2, exhausted: true, tokens: tokens(2) });

    // The envelope: the configured version, and the version metadata binding's id.
    expect(new Set(eventsA.map((e) => e.ver))).toEqual(new Set([FIXTURE_VERSION_A]));
    expect(new Set(eventsB.map((e) => e.ver))).toEqual(new Set([FIXTURE_VERSION_B]));
    // Its cost: `,"ver":"<id>"` on every event, 45 bytes for a Workers version id (a UUID).
    const e = eventsB[0]!;
    const { ver: _v, ...without } = e;
    expect(utf8Length(JSON.stringify(e)) - utf8Length(JSON.stringify(without))).toBe(`,"ver":""`.length + FIXTURE_VERSION_B.length);
    expect(FIXTURE_VERSION_B.length).toBe(36);

    // Ingest: each incident keeps the version it opened under, and each version's deploy is recorded.
    const expA = expectedFrom(eventsA);
    const expB = expectedFrom(eventsB);
    const rows = await pollRows<IncidentVersion>(
      INCIDENTS,
      [nameA, nameB],
      (r) => r.length === 3 && r.every((x) => x.status !== "open") && r.reduce((s, x) => s + Number(x.respent), 0) === expA.respentTokens + expB.respentTokens,
    );
    for (const r of rows) expect(r.version).toBe(r.agent_name === nameA ? FIXTURE_VERSION_A : FIXTURE_VERSION_B);
    const deploys = await listDeploys(env.DB);
    for (const [version, events] of [
      [FIXTURE_VERSION_A, eventsA],
      [FIXTURE_VERSION_B, eventsB],
    ] as const) {
      const d = deploys.find((x) => x.version === version);
      expect(d, version).toBeDefined();
      expect(d!.firstSeen).toBeLessThanOrEqual(Math.min(...events.map((x) => x.time)));
    }

    // The read models: per-version figures moved by exactly what these events say.
    const after = (await versionFigures(env.DB, [FIXTURE_VERSION_A, FIXTURE_VERSION_B])).figures;
    const moved = (i: number) => ({
      incidents: after[i]!.incidents - before[i]!.incidents,
      exhausted: after[i]!.exhausted - before[i]!.exhausted,
      respentTokens: after[i]!.respentTokens - before[i]!.respentTokens,
    });
    expect(moved(0)).toEqual(expA);
    expect(moved(1)).toEqual(expB);
    // The incidents list groups and filters by version too.
    expect((await groupIncidents(env.DB, { agentName: nameA }, "version")).groups).toEqual([{ key: FIXTURE_VERSION_A, n: expA.incidents }]);
    const listed = await listIncidents(env.DB, { version: FIXTURE_VERSION_B, agentName: nameB });
    expect(listed.items.map((i) => [i.incidentId, i.version, i.status])).toEqual([[`inc-${nameB}-1`, FIXTURE_VERSION_B, "exhausted"]]);
  });

  it("an incident belongs to the version of its earliest versioned event, whatever order its events arrive in", async () => {
    const agentName = `ver-order-${uid()}`;
    const [older, newer] = [`v-old-${uid()}`, `v-new-${uid()}`];
    const base = { maxAttempts: 3, recoveryKind: "retry" as const };
    const life = (incidentId: string) => {
      const corr = { incidentId, requestId: `req-${incidentId}` };
      const t = Date.now() - 60_000;
      return [
        { ...makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, { agentName, corr, time: t }), ver: older },
        { ...makeEvent("chat.recovery.attempt", { ...base, attempt: 2 }, { agentName, corr, time: t + 1000 }), ver: newer },
        // Unversioned and earliest (an older sender): it says nothing of the version.
        makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, { agentName, corr, time: t - 1000 }),
      ];
    };
    const [x, y, z] = [life(`inc-${agentName}-x`), life(`inc-${agentName}-y`), life(`inc-${agentName}-z`)];
    // x in order, one batch each (merged in SQL); y newest first; z in one batch, newest first (folded in the batch).
    for (const ev of x) await ingestBatch(env.DB, asMessages([ev]));
    for (const ev of [...y].reverse()) await ingestBatch(env.DB, asMessages([ev]));
    await ingestBatch(env.DB, asMessages([...z].reverse()));
    const got = await env.DB.prepare("SELECT incident_id, version FROM incidents WHERE agent_name = ? ORDER BY incident_id")
      .bind(agentName)
      .all<{ incident_id: string; version: string }>();
    expect(got.results).toEqual([
      { incident_id: `inc-${agentName}-x`, version: older },
      { incident_id: `inc-${agentName}-y`, version: older },
      { incident_id: `inc-${agentName}-z`, version: older },
    ]);
  });

  it("a version's deploy row is written once, and a versioned incident costs no more rows than an unversioned one", async () => {
    const agentName = `ver-cost-${uid()}`;
    const version = `v-cost-${uid()}`;
    const base = { maxAttempts: 3, recoveryKind: "retry" as const };
    const batch = (incidentId: string, ver: string | null, time: number) => {
      const corr = { incidentId, requestId: `req-${incidentId}` };
      return [0, 1, 2].map((i) => {
        const e = makeEvent("chat.recovery.attempt", { ...base, attempt: i + 1 }, { agentName, corr, time: time + i });
        return ver ? { ...e, ver } : e;
      });
    };
    const t = Date.now() - 30_000;
    const first = await ingestBatch(env.DB, asMessages(batch(`inc-${agentName}-1`, version, t)));
    const again = await ingestBatch(env.DB, asMessages(batch(`inc-${agentName}-2`, version, t + 10)));
    const plain = await ingestBatch(env.DB, asMessages(batch(`inc-${agentName}-3`, null, t + 20)));
    // The first sighting: the row, its primary key's index (a text key) and deploys_first_seen. Later batches write none.
    expect(first.rowsWrittenByTable.deploys).toBe(3);
    expect(again.rowsWrittenByTable.deploys ?? 0).toBe(0);
    expect(plain.rowsWrittenByTable.deploys ?? 0).toBe(0);
    // A new versioned incident writes exactly what a new unversioned one does (incidents_version holds both).
    expect(again.rowsWrittenByTable.incidents).toBe(plain.rowsWrittenByTable.incidents);
    // A later event of a versioned incident rewrites no version entry: the same as an unversioned incident's.
    const laterV = await ingestBatch(env.DB, asMessages(batch(`inc-${agentName}-2`, version, t + 100).slice(0, 1)));
    const laterP = await ingestBatch(env.DB, asMessages(batch(`inc-${agentName}-3`, null, t + 100).slice(0, 1)));
    expect(laterV.rowsWrittenByTable.incidents).toBe(laterP.rowsWrittenByTable.incidents);
    console.log(
      `[deploys cost] first batch of a version: deploys ${first.rowsWrittenByTable.deploys} rows; new incident: incidents ${again.rowsWrittenByTable.incidents} rows (versioned) vs ${plain.rowsWrittenByTable.incidents} (unversioned); later event: ${laterV.rowsWrittenByTable.incidents} vs ${laterP.rowsWrittenByTable.incidents}`,
    );
  });
});

describe("the storm rule inside the hot store", () => {
  const HOUR = 3_600_000;
  const now = Date.UTC(2026, 10, 20, 12);
  const deploy = { version: "v-new", firstSeen: now - 10 * 60_000 };
  const asked: { version: string; from: number; to: number }[] = [];
  const reads = (previousFirstSeen: number) => ({
    listDeploys: async () => [deploy],
    previousDeploy: async () => ({ version: "v-old", firstSeen: previousFirstSeen }),
    incidentsOpenedIn: async (version: string, from: number, to: number) => {
      asked.push({ version, from, to });
      return { n: version === "v-new" ? 5 : 0, top: null };
    },
  });
  const config = { windowMs: 15 * 60_000, factor: 3, minIncidents: 3, closedKeptMs: 48 * HOUR };

  it("compares with the previous version's first window while the hot store still holds its closed incidents", async () => {
    asked.length = 0;
    const storms = await stormsOf(reads(now - 5 * HOUR), now, config);
    expect(asked.find((a) => a.version === "v-old")).toEqual({ version: "v-old", from: now - 5 * HOUR, to: now - 5 * HOUR + config.windowMs });
    expect(storms[0]?.previousFrom).toBe(now - 5 * HOUR);
  });

  it("compares with the previous version's last window before the deploy once its first is older than the hot window (closed incidents left D1)", async () => {
    asked.length = 0;
    const storms = await stormsOf(reads(now - 5 * 24 * HOUR), now, config);
    expect(asked.find((a) => a.version === "v-old")).toEqual({ version: "v-old", from: deploy.firstSeen - config.windowMs, to: deploy.firstSeen });
    expect(storms[0]?.previousFrom).toBe(deploy.firstSeen - config.windowMs);
  });
});
