import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { exportHref } from "../../../console/links";
import { exportCutLine, exportFailedLine } from "../../../console/words";
import { type ExportReader, exportStream } from "../../../worker/export/stream";
import { publishEnvTeamKeys } from "../access-tokens";
import { call, uid } from "./harness";

// A long export through the Worker's real entry (the instrumented handler worker/index.ts exports): every row
// arrives, in CSV and JSON, and the file says it is whole. Issue 36 defect 1: past ~400 rows the transfer stopped
// on a normal row ("Config is undefined" from the tracing wrapper), and nobody could tell the file was incomplete.

const u = uid();
const CLASS = `LongExport${u}`;
const N = 1_050;
const T0 = Date.now() - 3_600_000;

beforeAll(async () => {
  await publishEnvTeamKeys();
  const rows = Array.from({ length: N }, (_, i) => ({ id: `long-${u}-${String(i).padStart(5, "0")}`, name: `long-a${i % 7}`, t: T0 + i * 1000 }));
  await env.DB.prepare(
    `INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, first_seen, last_seen)
     SELECT j ->> '$.id', 'chat', ?2, j ->> '$.name', 'exhausted', j ->> '$.t', 'ev-' || (j ->> '$.id'), 3, j ->> '$.t', j ->> '$.t'
     FROM (SELECT value AS j FROM json_each(?1))`,
  )
    .bind(JSON.stringify(rows), CLASS)
    .run();
  await env.DB.prepare(
    `INSERT INTO runs (fiber_id, agent_class, agent_name, kind, name, outcome, outcome_at, outcome_event_id, first_seen, last_seen)
     SELECT j ->> '$.id', ?2, j ->> '$.name', 'fiber', 'job', 'failed', j ->> '$.t', 'ev-' || (j ->> '$.id'), j ->> '$.t', j ->> '$.t'
     FROM (SELECT value AS j FROM json_each(?1))`,
  )
    .bind(JSON.stringify(rows), CLASS)
    .run();
});

/** Reads a body as a slow client does (a browser saving to disk, curl over a thin link): a pause between chunks. */
async function slowText(res: Response): Promise<string> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + dec.decode();
    text += dec.decode(value, { stream: true });
    await scheduler.wait(20);
  }
}

describe("a long export through the Worker's entry", () => {
  it(`downloads all ${N} incidents as CSV, header first, no cut line`, async () => {
    const res = await call(exportHref("incidents", "csv", { agentClass: CLASS }), { as: "viewer" });
    expect(res.status).toBe(200);
    const lines = (await slowText(res)).split("\r\n").filter(Boolean);
    const [header, ...rows] = lines;
    expect(header).toContain("incidentId");
    expect(rows.filter((l) => l.includes(`long-${u}-`))).toHaveLength(N);
    expect(rows).toHaveLength(N);
  });

  it(`downloads all ${N} incidents as one JSON document that counts them`, async () => {
    const res = await call(exportHref("incidents", "json", { agentClass: CLASS }), { as: "viewer" });
    expect(res.status).toBe(200);
    const doc = JSON.parse(await slowText(res)) as { items: { incidentId: string }[]; count: number; truncated: boolean };
    expect(doc.items).toHaveLength(N);
    expect(new Set(doc.items.map((i) => i.incidentId)).size).toBe(N);
    expect(doc).toMatchObject({ count: N, truncated: false });
  });

  it(`downloads all ${N} runs as CSV too`, async () => {
    const res = await call(exportHref("runs", "csv", { agentClass: CLASS }), { as: "viewer" });
    expect(res.status).toBe(200);
    const [header, ...lines] = (await slowText(res)).split("\r\n").filter(Boolean);
    expect(header).toContain("fiberId");
    // A runs download says after its rows which span of the R2 history it read for completed runs (none here): no cut line.
    const rows = lines.filter((l) => !l.startsWith("# completed runs from the R2 history"));
    expect(lines.length - rows.length).toBe(1);
    expect(rows.filter((l) => l.includes(`long-${u}-`))).toHaveLength(N);
    expect(rows).toHaveLength(N);
  });
});

describe("an export that cannot finish", () => {
  /** Three pages of two rows, then the store fails on the fourth read. */
  const failingAfter3: ExportReader = async (cursor) => {
    const n = cursor === null ? 0 : Number(cursor);
    if (n >= 3) throw new Error("D1_ERROR: the database is overloaded");
    return { items: [{ id: `r${2 * n}` }, { id: `r${2 * n + 1}` }], next: String(n + 1) };
  };
  const opts = { cap: 100, head: { list: "probe" }, cutLine: exportCutLine, failedLine: exportFailedLine, pageSize: 2 };

  /** Reads every chunk, then the error the transfer ended with (null: it ended normally). */
  async function drain(s: ReadableStream<Uint8Array>): Promise<{ text: string; error: unknown }> {
    const reader = s.getReader();
    const dec = new TextDecoder();
    let text = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return { text, error: null };
        text += dec.decode(value, { stream: true });
      }
    } catch (error) {
      return { text, error };
    }
  }

  it("ends the CSV with a line saying it is incomplete, then fails the transfer", async () => {
    const { text, error } = await drain(await exportStream(failingAfter3, { ...opts, format: "csv" }));
    const lines = text.split("\r\n").filter(Boolean);
    expect(lines).toEqual(["id", "r0", "r1", "r2", "r3", "r4", "r5", exportFailedLine(6)]);
    // The database's words stay in the log, not in the file.
    expect(text).not.toContain("D1_ERROR");
    expect(error).toBeInstanceOf(Error);
  });

  it("ends the JSON as a valid document that says it is incomplete, then fails the transfer", async () => {
    const { text, error } = await drain(await exportStream(failingAfter3, { ...opts, format: "json" }));
    expect(JSON.parse(text)).toEqual({
      list: "probe",
      items: [0, 1, 2, 3, 4, 5].map((i) => ({ id: `r${i}` })),
      count: 6,
      truncated: true,
      complete: false,
      error: exportFailedLine(6),
    });
    expect(error).toBeInstanceOf(Error);
  });
});
