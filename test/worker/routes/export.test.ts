import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { exportHref } from "../../../console/links";
import { exportCutLine, exportFailedLine } from "../../../console/words";
import { consoleStore } from "../../../src/store/console-store";
import { singleStore } from "../../../src/store/partitions";
import type { AgentRow, Page } from "../../../src/store/read-models";
import { DEFAULT_STUCK_CONFIG } from "../../../src/store/read-models/stuck";
import { app } from "../../../worker/app";
import { csvCell } from "../../../worker/export/csv";
import { EXPORT_SOURCES } from "../../../worker/export/lists";
import { exportStream } from "../../../worker/export/stream";
import { publishEnvTeamKeys } from "../access-tokens";
import { accessToken, call, csrfFor, ORIGIN, postForm, registerAgent, USERS, uid } from "./harness";

// GET /export/:list through the real Worker: the same filters as the list's page (same read model), streamed page by
// page over the keyset, capped by EXPORT_ROW_CAP and saying so, CSV escaped for spreadsheets; bad input is a 4xx.

const u = uid();
const CLASS = `ExportProbe${u}`;
const OTHER = `ExportOther${u}`;
const NAMES = [`exp-a-${u}`, `exp-b-${u}`, `exp-c-${u}`];
/** A reason with every character CSV must escape, starting like a spreadsheet formula. */
const NASTY = `=HYPERLINK("http://x.test","click"), then\nnext line ${u}`;
const REASON_FILTER = `nasty_${u}`;

const JSON_ACCEPT = { Accept: "application/json" };

/** Splits CSV text into rows of cells, as RFC 4180 reads it (quoted cells may hold commas, quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") {
      row.push(cell);
      cell = "";
    } else if (ch === "\r" && text[i + 1] === "\n") {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
      i++;
    } else cell += ch;
  }
  if (cell || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/** The export as a viewer through a Worker whose env sets EXPORT_ROW_CAP (a fresh env object: its config is parsed anew). */
async function exportWithCap(path: string, cap: string) {
  const headers = { "Cf-Access-Jwt-Assertion": await accessToken(USERS.viewer) };
  return app.request(`${ORIGIN}${path}`, { headers }, { ...env, EXPORT_ROW_CAP: cap });
}

beforeAll(async () => {
  await publishEnvTeamKeys();
  for (const n of NAMES) await registerAgent(CLASS, n);
  await registerAgent(OTHER, `exp-other-${u}`);
  // A viewer's bulk attempt is refused and audited with its reason as typed: the audit log now holds NASTY.
  const refused = await postForm("/bulk", "viewer", { incidentReason: REASON_FILTER, action: "force_idle", reason: NASTY }, { csrf: await csrfFor("viewer") });
  expect(refused.status).toBe(403);
});

describe("GET /export/:list", () => {
  it("downloads the agents list with the page's filters, as CSV and JSON, for a viewer", async () => {
    const page = (await (await call(`/agents?agentClass=${CLASS}`, { as: "viewer", headers: JSON_ACCEPT })).json()) as Page<AgentRow>;
    expect(page.items.map((a) => a.agentName).sort()).toEqual([...NAMES].sort());

    const csv = await call(exportHref("agents", "csv", { agentClass: CLASS }), { as: "viewer" });
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(csv.headers.get("content-disposition")).toMatch(/^attachment; filename="agents-.*\.csv"$/);
    expect(csv.headers.get("x-export-cap")).toBe("10000");
    const [header, ...rows] = parseCsv(await csv.text());
    const col = (name: string) => header!.indexOf(name);
    expect(col("agentClass")).toBeGreaterThanOrEqual(0);
    // The same rows, in the same order, as the page's own read model gave.
    expect(rows.map((r) => r[col("agentName")])).toEqual(page.items.map((a) => a.agentName));
    expect(rows.every((r) => r[col("agentClass")] === CLASS)).toBe(true);

    const json = await call(exportHref("agents", "json", { agentClass: CLASS }), { as: "viewer" });
    expect(json.headers.get("content-type")).toMatch(/^application\/json/);
    const doc = (await json.json()) as { list: string; filters: Record<string, string>; cap: number; items: AgentRow[]; count: number; truncated: boolean };
    expect(doc).toMatchObject({ list: "agents", filters: { agentClass: CLASS }, cap: 10_000, count: 3, truncated: false });
    expect(doc.items).toEqual(page.items);
  });

  it("cuts the list at EXPORT_ROW_CAP, states the cap, and says where it was cut", async () => {
    const csv = await exportWithCap(exportHref("agents", "csv", { agentClass: CLASS }), "2");
    expect(csv.status).toBe(200);
    expect(csv.headers.get("x-export-cap")).toBe("2");
    const lines = (await csv.text()).split("\r\n").filter(Boolean);
    expect(lines).toHaveLength(1 + 2 + 1);
    expect(lines.at(-1)).toBe(exportCutLine(2));

    const json = (await (await exportWithCap(exportHref("agents", "json", { agentClass: CLASS }), "2")).json()) as Record<string, unknown> & {
      items: unknown[];
    };
    expect(json.items).toHaveLength(2);
    expect(json).toMatchObject({ cap: 2, count: 2, truncated: true, cutAt: 2 });

    // Exactly as many rows as the cap: whole, not cut.
    const exact = (await (await exportWithCap(exportHref("agents", "json", { agentClass: CLASS }), "3")).json()) as Record<string, unknown>;
    expect(exact).toMatchObject({ count: 3, truncated: false });
    expect(exact.cutAt).toBeUndefined();
  });

  it("heads an empty list's CSV with the columns a non-empty one of the same columns has", async () => {
    const nobody = { agentClass: `NoSuchClass${u}` };
    const empty = await call(exportHref("agents", "csv", nobody), { as: "viewer" });
    expect(empty.status).toBe(200);
    // The fields of the page's columns: the agent, its class, when it was last seen, its event counts.
    expect(parseCsv(await empty.text())).toEqual([["agentName", "agentClass", "lastSeen", "seqMax", "seqSeen"]]);
    const emptyJson = (await (await call(exportHref("agents", "json", nobody), { as: "viewer" })).json()) as { items: unknown[]; count: number };
    expect(emptyJson).toMatchObject({ items: [], count: 0 });

    // With columns picked, the empty file's header is the full file's header: the same fields, in the same order.
    const picked = `${exportHref("agents", "csv", { agentClass: CLASS })}&cols=lastSeen`;
    const full = parseCsv(await (await call(picked, { as: "viewer" })).text());
    const none = parseCsv(await (await call(`${exportHref("agents", "csv", nobody)}&cols=lastSeen`, { as: "viewer" })).text());
    expect(full.length).toBe(1 + NAMES.length);
    expect(none).toEqual([full[0]]);
  });

  it("reads page by page over the keyset: small pages give the same rows as one read", async () => {
    const read = (f: Record<string, string>) =>
      EXPORT_SOURCES.agents(
        {
          store: consoleStore({ store: singleStore(env.DB), history: { shards: 1, previousShards: [] }, hotWindowHours: 48, futureSkewMs: 0 }),
          now: Date.now(),
          stuckConfig: DEFAULT_STUCK_CONFIG,
        },
        f,
        100,
      );
    const text = (s: ReadableStream<Uint8Array>) => new Response(s).text();
    const opts = { format: "json" as const, cap: 100, head: {}, cutLine: exportCutLine, failedLine: exportFailedLine };
    const paged = JSON.parse(await text(await exportStream(read({ agentClass: CLASS }), { ...opts, pageSize: 1 })));
    const whole = JSON.parse(await text(await exportStream(read({ agentClass: CLASS }), opts)));
    expect(paged.items).toHaveLength(3);
    expect(paged.items).toEqual(whole.items);
  });

  it("escapes CSV: quotes, commas and line breaks quoted, a formula made text", async () => {
    const res = await call(exportHref("audit", "csv", { actor: USERS.viewer, targetName: `incidentReason=${REASON_FILTER}` }), { as: "viewer" });
    expect(res.status).toBe(200);
    const body = await res.text();
    // The raw cell: prefixed with ', quoted, its quotes doubled.
    expect(body).toContain(`"'=HYPERLINK(""http://x.test"",""click""), then\nnext line ${u}"`);
    const [header, ...rows] = parseCsv(body);
    expect(rows).toHaveLength(1);
    expect(rows[0]![header!.indexOf("reason")]).toBe(`'${NASTY}`);
    expect(rows[0]![header!.indexOf("result")]).toBe("denied");
    expect(rows[0]).toHaveLength(header!.length);
  });

  it("makes every formula start text, and leaves numbers as numbers", () => {
    for (const start of ["=", "+", "-", "@", "\t", "\r"]) expect(csvCell(`${start}1+1`).replace(/^"/, "")).toMatch(/^'/);
    expect(csvCell(-3)).toBe("-3");
    expect(csvCell(null)).toBe("");
    expect(csvCell({ a: "b,c" })).toBe('"{""a"":""b,c""}"');
  });

  it("refuses an unknown list, an unknown format and a bad filter with a 4xx and a sentence", async () => {
    const list = await call("/export/nope?format=csv", { as: "viewer", headers: JSON_ACCEPT });
    expect(list.status).toBe(404);
    expect(await list.json()).toMatchObject({ ok: false, error: { code: "not_found", message: expect.stringContaining("runs") } });

    const format = await call(exportHref("runs", "csv").replace("format=csv", "format=xlsx"), { as: "viewer", headers: JSON_ACCEPT });
    expect(format.status).toBe(400);
    expect(await format.json()).toMatchObject({ ok: false, error: { code: "invalid_input", message: expect.stringContaining("csv, json") } });

    const filter = await call(exportHref("incidents", "csv", { status: "bogus" }), { as: "viewer", headers: JSON_ACCEPT });
    expect(filter.status).toBe(400);
    expect(await filter.json()).toMatchObject({ ok: false, error: { code: "invalid_input", message: expect.stringContaining("status") } });

    const anonymous = await call(exportHref("runs", "csv"));
    expect(anonymous.status).toBe(401);
  });

  it("offers the download on each list page with the page's filters", async () => {
    const res = await call(`/agents?agentClass=${OTHER}&limit=1`, { as: "viewer" });
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(html).toContain(exportHref("agents", "csv", { agentClass: OTHER }).replace(/&/g, "&amp;"));
  });
});
