import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../worker/config";
import { DEFAULT_BOUNDS, ingestBounds } from "../../worker/ingest/bounds";
import { ingestBatch } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";
import { pollRows } from "../helpers";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { getText } from "../worker/routes/harness";

const uid = () => crypto.randomUUID().slice(0, 8);
const MIN = 60_000;
const DAY = 86_400_000;
const exhausted = (incidentId: string, agentName: string, time: number) =>
  makeEvent(
    "chat.recovery.exhausted",
    { attempt: 3, maxAttempts: 3, recoveryKind: "retry", reason: "max_attempts_exceeded" },
    { agentName, time, corr: { incidentId } },
  );

/** Dead letters whose body mentions `needle`, once there are `n` of them. */
const deadLettersWith = (needle: string, n: number) =>
  pollRows<{ reason: string; event_type: string | null; body: string }>(
    "SELECT reason, event_type, body FROM dead_letters WHERE instr(body, ?) > 0 ORDER BY reason",
    [needle],
    (r) => r.length === n,
  );

const stored = async (id: string) => (await env.DB.prepare("SELECT payload FROM events WHERE id = ?").bind(id).first<{ payload: string }>())?.payload ?? null;

/** A JSON text nested `depth` levels deep, built without recursion. */
const deepJson = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("the event time window", () => {
  it("dead-letters times far in the future or before the retention period, with the reason, through the real Queue; pages stay up", async () => {
    const agentName = `clock-${uid()}`;
    const now = Date.now();
    const future = exhausted(`future-${uid()}`, agentName, 9e15);
    const epoch = exhausted(`epoch-${uid()}`, agentName, 0);
    const tooOld = exhausted(`old-${uid()}`, agentName, now - 40 * DAY);
    const ahead = exhausted(`ahead-${uid()}`, agentName, now + 10 * MIN);
    const skewed = exhausted(`skewed-${uid()}`, agentName, now + 2 * MIN); // inside the 300 s allowance
    await env.TELEMETRY_QUEUE.sendBatch([future, epoch, tooOld, ahead, skewed].map((body) => ({ body: JSON.stringify(body), contentType: "text" as const })));

    const dead = await deadLettersWith(agentName, 4);
    const reasonOf = (e: TelemetryEvent) => dead.find((d) => d.body.includes(e.id))!.reason;
    expect(reasonOf(future)).toMatch(
      /^event time 9000000000000000 \(past any date\) is [\d,]+ years in the future; the console accepts at most 300 s of clock skew/,
    );
    expect(reasonOf(epoch)).toMatch(/^event time 1970-01-01T00:00:00\.000Z is 5\d years old; the console accepts events up to 30 days old/);
    expect(reasonOf(tooOld)).toMatch(/ is 40 days old; the console accepts events up to 30 days old/);
    expect(reasonOf(ahead)).toMatch(/ is \d+ minutes in the future; the console accepts at most 300 s of clock skew/);
    expect(dead.every((d) => d.event_type === "chat.recovery.exhausted")).toBe(true);
    // The body is kept as sent.
    expect(JSON.parse(dead.find((d) => d.body.includes(future.id))!.body)).toEqual(future);

    await pollRows("SELECT id FROM events WHERE id = ?", [skewed.id], (r) => r.length === 1);
    expect(await stored(future.id)).toBeNull();
    const rows = await env.DB.prepare("SELECT incident_id FROM incidents WHERE agent_name = ?").bind(agentName).all<{ incident_id: string }>();
    expect(rows.results.map((r) => r.incident_id)).toEqual([skewed.corr.incidentId]);

    for (const path of ["/", "/incidents", `/incidents?agentName=${agentName}`, "/sessions", "/runs"]) {
      const page = await getText(path, "viewer");
      expect(page.status, path).toBe(200);
      expect(page.text).not.toContain(future.corr.incidentId!);
      expect(page.text).not.toContain("invalid time");
    }
  });

  it("reads its window from the parsed settings: the retention period by default (malformed ones: test/worker/config.test.ts)", () => {
    const bounds = (vars: Record<string, string>) => ingestBounds(parseConfig({ AUTH_MODE: "dev", ...vars }).ingest);
    expect(bounds({})).toEqual(DEFAULT_BOUNDS);
    expect(bounds({ RETENTION_DAYS: "7" })).toMatchObject({ maxAgeMs: 7 * DAY, maxFutureSkewMs: 300_000 });
    expect(bounds({ RETENTION_DAYS: "7", INGEST_MAX_AGE_DAYS: "90", INGEST_MAX_FUTURE_SKEW_SECONDS: "30" })).toMatchObject({
      maxAgeMs: 90 * DAY,
      maxFutureSkewMs: 30_000,
    });
  });

  it("judges time against the receipt time it is given", async () => {
    const agentName = `receipt-${uid()}`;
    const at = Date.now() - 60 * DAY;
    const e = exhausted(`r-${uid()}`, agentName, at);
    const narrow = { ...DEFAULT_BOUNDS, maxAgeMs: DAY };
    expect(await ingestBatch(env.DB, [{ id: `m-${uid()}`, body: e }], { now: at + 2 * DAY, bounds: narrow })).toMatchObject({ stored: 0, deadLettered: 1 });
    expect(await ingestBatch(env.DB, [{ id: `m-${uid()}`, body: e }], { now: at + 1000, bounds: narrow })).toMatchObject({ stored: 1, deadLettered: 0 });
  });
});

describe("size and nesting caps", () => {
  it("dead-letters an event over 64 KiB with its size, and stores the others of the same packed message", async () => {
    const agentName = `big-${uid()}`;
    const big = makeEvent("fiber.failed", { fiberName: "etl", error: "e".repeat(120_000) }, { agentName, time: Date.now(), corr: { fiberId: `f-${uid()}` } });
    const small = makeEvent("fiber.started", { fiberName: "etl" }, { agentName, time: Date.now(), corr: big.corr });
    await env.TELEMETRY_QUEUE.send(JSON.stringify([big, small]), { contentType: "text" });
    const [dead] = await deadLettersWith(big.id, 1);
    expect(dead!.reason).toMatch(/^event too large: 120,\d{3} bytes; the console accepts at most 65,536 bytes per event/);
    expect(dead!.body.length).toBeGreaterThan(120_000); // kept whole
    await pollRows("SELECT id FROM events WHERE id = ?", [small.id], (r) => r.length === 1);
    expect(await stored(big.id)).toBeNull();
  });

  it("caps over-long free text with a marker instead of refusing the event, the same way every time", async () => {
    const agentName = `long-${uid()}`;
    const fiberId = `f-${uid()}`;
    const failed = makeEvent("fiber.failed", { fiberName: "n".repeat(300), error: "x".repeat(30_000) }, { agentName, corr: { fiberId } });
    const stash = makeEvent(
      "fiber.stashed",
      { fiberName: "etl", snapshot: { preview: "p".repeat(10_000), bytes: 10_000, truncated: false } },
      { agentName, corr: { fiberId } },
    );
    const r = await ingestBatch(
      env.DB,
      [failed, stash, failed].map((body, i) => ({ id: `m-${i}-${uid()}`, body })),
      { now: failed.time + 5000 },
    );
    expect(r).toMatchObject({ stored: 3, deadLettered: 0 });
    const p = JSON.parse((await stored(failed.id))!);
    expect(p.error).toBe(`${"x".repeat(4000)}… [cut at ingest: 26000 more chars]`);
    expect(p.fiberName).toBe(`${"n".repeat(200)}… [cut at ingest: 100 more chars]`);
    const s = JSON.parse((await stored(stash.id))!);
    expect(s.snapshot).toEqual({ preview: `${"p".repeat(4000)}… [cut at ingest: 6000 more chars]`, bytes: 10_000, truncated: true });
    const row = await env.DB.prepare("SELECT error, snapshot_preview FROM runs WHERE fiber_id = ?")
      .bind(fiberId)
      .first<{ error: string; snapshot_preview: string }>();
    expect(row).toEqual({ error: p.error, snapshot_preview: s.snapshot.preview });
  });

  it("dead-letters a 10,000-deep admin `before` with where it got too deep, through the real Queue", async () => {
    const agentName = `deep-${uid()}`;
    const e = makeEvent("admin.force_idle", { actor: "ops@example.com", reason: "stuck", result: "ok" }, { agentName, time: Date.now() });
    // Spliced in as text: the value is deeper than a recursive serialiser should be asked to go.
    const text = JSON.stringify(e).replace('"result":"ok"', `"result":"ok","before":${deepJson(10_000)}`);
    await env.TELEMETRY_QUEUE.send(text, { contentType: "text" });
    const [dead] = await deadLettersWith(e.id, 1);
    expect(dead!.reason).toMatch(/^invalid event: nesting deeper than 32 levels \(at payload\.before\.a\.a\.a/);
    expect(dead!.body).toBe(text);
    expect(await stored(e.id)).toBeNull();
    // Within the limit it is stored.
    const ok = makeEvent(
      "admin.force_idle",
      { actor: "ops@example.com", reason: "stuck", result: "ok", before: JSON.parse(deepJson(20)) },
      { agentName, time: Date.now() },
    );
    await env.TELEMETRY_QUEUE.send(JSON.stringify(ok), { contentType: "text" });
    await pollRows("SELECT id FROM events WHERE id = ?", [ok.id], (r) => r.length === 1);
  });
});

describe("bodies that are not JSON text", () => {
  it("keeps a binary message in dead letters as base64 with its size", async () => {
    const bytes = new TextEncoder().encode(`{"type":"session.status_idle","marker":"${uid()}"}`);
    const b64 = btoa(String.fromCharCode(...bytes));
    const size = bytes.byteLength; // the send may detach the buffer
    await env.TELEMETRY_QUEUE.send(bytes, { contentType: "bytes" });
    const [dead] = await deadLettersWith(b64, 1);
    expect(dead!.reason).toMatch(
      /^binary body \((ArrayBuffer|Uint8Array), \d+ bytes\): the console accepts events as JSON text or JSON values; the bytes are kept here as base64$/,
    );
    const body = JSON.parse(dead!.body);
    expect(body).toMatchObject({ bytes: size, base64: b64, truncated: false });
  });

  it("keeps a structured-clone message JSON cannot hold, tagged, instead of `{}`", async () => {
    const marker = `map-${uid()}`;
    await env.TELEMETRY_QUEUE.send(
      new Map<string, unknown>([
        ["type", "session.status_idle"],
        ["marker", marker],
        ["n", 10n],
      ]),
      { contentType: "v8" },
    );
    const [dead] = await deadLettersWith(marker, 1);
    expect(dead!.reason).toBe("invalid event: not JSON data: the event is a Map");
    expect(JSON.parse(dead!.body)).toEqual({
      $map: [
        ["type", "session.status_idle"],
        ["marker", marker],
        ["n", { $bigint: "10" }],
      ],
    });
  });

  it("refuses structured values JSON would silently change, naming where they are", async () => {
    const agentName = `v8-${uid()}`;
    const e = makeEvent("admin.trigger_alarm", { actor: "ops@example.com", reason: "now", result: "ok" }, { agentName, time: Date.now() });
    const withDate = { ...e, payload: { ...e.payload, before: { at: new Date(0), tags: new Set(["a"]) } } };
    const r = await ingestBatch(env.DB, [{ id: `m-${uid()}`, body: withDate }]);
    expect(r).toMatchObject({ stored: 0, deadLettered: 1 });
    const [dead] = await deadLettersWith(e.id, 1);
    expect(dead!.reason).toMatch(/^invalid event: not JSON data: payload\.before\.(at is a Date|tags is a Set)$/);
    expect(dead!.body).toContain('"tags":{"$set":["a"]}');
  });
});

describe("masking at ingest", () => {
  it("masks credentials in previews, errors and admin before/after again, whatever the producer did", async () => {
    const agentName = `mask-${uid()}`;
    const fiberId = `f-${uid()}`;
    const key = "sk-live_abcdefghijklmnopqrstuvwxyz123456";
    const events = [
      makeEvent("fiber.failed", { fiberName: "etl", error: `upstream refused key ${key}` }, { agentName, corr: { fiberId } }),
      makeEvent(
        "fiber.stashed",
        { fiberName: "etl", snapshot: { preview: `{"apiKey":"${key}"}`, bytes: 60, truncated: false } },
        { agentName, corr: { fiberId } },
      ),
      makeEvent(
        "admin.force_idle",
        { actor: "ops@example.com", reason: "stuck", result: "ok", before: { config: { password: "hunter2-hunter2" }, note: `Authorization: Bearer ${key}` } },
        { agentName },
      ),
    ];
    expect(
      await ingestBatch(
        env.DB,
        events.map((body, i) => ({ id: `m-${i}-${uid()}`, body })),
        { now: events[2]!.time + 1000 },
      ),
    ).toMatchObject({ stored: 3, deadLettered: 0 });
    for (const e of events) {
      const text = (await stored(e.id))!;
      expect(text).not.toContain(key);
      expect(text).toContain("[masked: ");
    }
    expect(await stored(events[2]!.id)).not.toContain("hunter2");
    const row = await env.DB.prepare("SELECT error, snapshot_preview FROM runs WHERE fiber_id = ?")
      .bind(fiberId)
      .first<{ error: string; snapshot_preview: string }>();
    expect(JSON.stringify(row)).not.toContain(key);
  });
});
