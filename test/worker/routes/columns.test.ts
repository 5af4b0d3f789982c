import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnyColumnSet, columnIds } from "../../../console/components/columns";
import { type ListName, VIEW_LISTS } from "../../../console/links";
import { LIST_COLUMNS } from "../../../console/list-columns";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { accessToken, bulkBatch, call, csrfFromPage, getText, ORIGIN, uid } from "./harness";

// `cols=` on every list saved views cover, through the real Worker: each list's one column declaration decides the
// table's headers and cells (data-col), the phone cards' labels (data-label), the download's fields and what a
// saved view reproduces. Rows come from fixture agents through the real paths: a ProbeAgent reports a session, an
// ambiguous op, a backup, a hanging fiber and an exhausted chat recovery (which raises alerts); a bulk batch writes
// audit rows; a LossyAgent's held run is aged past the stuck threshold.

const u = uid();
const NAME = `cols-${u}`;
const STUCK_NAME = `cols-stuck-${u}`;
const MIN = 60_000;

type Case = { list: ListName; path: string; testId: string; pick: [string, string] };
const CASES: Case[] = [
  { list: "incidents", path: `/incidents?agentName=${NAME}`, testId: "incidents", pick: ["status", "reason"] },
  { list: "runs", path: `/runs?agentName=${NAME}`, testId: "fibers", pick: ["name", "status"] },
  { list: "sessions", path: "/sessions?agentClass=ProbeAgent", testId: "sessions", pick: ["status", "recoveries"] },
  { list: "ops", path: `/ops?agentName=${NAME}&open=true`, testId: "ops", pick: ["detail", "resolution"] },
  { list: "backups", path: `/backups?sessionName=${NAME}`, testId: "backups", pick: ["tenant", "size"] },
  { list: "audit", path: "/audit?action=bulk_trigger_alarm", testId: "audit", pick: ["actor", "result"] },
  { list: "agents", path: "/agents?agentClass=ProbeAgent", testId: "agents", pick: ["class", "lastSeen"] },
  { list: "stuck", path: "/stuck?agentClass=LossyAgent", testId: "stuck", pick: ["rule", "why"] },
  { list: "alerts", path: "/alerts?kind=exhausted", testId: "alerts", pick: ["kind", "status"] },
];

const VIEW_SAVER = `cols-views-${u}@example.com`;
/** A request as this file's own signed-in viewer (its saved views and last views are its own). */
async function asViewSaver(path: string, init: { method?: string; headers?: Record<string, string>; body?: string; redirect?: "manual" } = {}) {
  const res = await call(path, { ...init, headers: { ...init.headers, "Cf-Access-Jwt-Assertion": await accessToken(VIEW_SAVER) } });
  return { status: res.status, location: res.headers.get("location"), text: await res.text() };
}

const setOf = (list: ListName): AnyColumnSet => LIST_COLUMNS[list]!;
const withCols = (path: string, cols: string) => `${path}${path.includes("?") ? "&" : "?"}cols=${cols}`;

/** A list's table as the page renders it: its data-cols, its headers' and each row's cells' column ids and labels. */
function tableOf(html: string, testId: string) {
  const table = new RegExp(`<table data-testid="${testId}"[^>]*>[\\s\\S]*?</table>`).exec(html)?.[0];
  expect(table, `a table data-testid="${testId}"`).toBeDefined();
  const dataCols = new RegExp(`<table data-testid="${testId}"(?: data-cols="([^"]*)")?`).exec(table!)![1] ?? null;
  const head = /<thead>([\s\S]*?)<\/thead>/.exec(table!)![1]!;
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(table!)![1]!;
  const rows = [...body.matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)].map((m) => [...m[1]!.matchAll(/<td[^>]*data-col="([^"]+)" data-label="([^"]*)"/g)]);
  return {
    dataCols,
    heads: [...head.matchAll(/<th data-col="([^"]+)"[^>]*>\s*([^<]*?)\s*<\/th>/g)].map((m) => ({ id: m[1]!, header: m[2]! })),
    rows: rows.map((cells) => cells.map((c) => ({ id: c[1]!, label: c[2]! }))),
  };
}

beforeAll(async () => {
  await publishEnvTeamKeys();
  const probe = await getAgentByName(env.ProbeAgent, NAME);
  const session = { sessionName: NAME };
  await probe.recordEvent("session.status_running", { turnSeq: 1 }, session);
  await probe.recordEvent("op.ambiguous", { opKind: "payment.charge", turnSeq: 1, detail: "charge 12.99" }, { ...session, opId: `op-${u}` });
  await probe.recordEvent(
    "backup.created",
    { handle: `ws/${u}`, tenant: `tenant-${u}`, environment: "prod", sessionName: NAME, expiresAt: Date.now() + 86_400_000, bytes: 42 },
    session,
  );
  await probe.startHangingFiber(undefined, `hang-${u}`, { step: 1 });
  const incidentId = `req-${u}:msg-1`;
  await probe.emitSdkEvent("chat:recovery:exhausted", {
    incidentId,
    requestId: `req-${u}`,
    attempt: 3,
    maxAttempts: 3,
    recoveryKind: "retry",
    reason: "max_attempts_exceeded",
  });
  await bulkBatch("cols");
  const lossy = await getAgentByName(env.LossyAgent, STUCK_NAME);
  const runId = await lossy.startHeld();
  await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = ?", [STUCK_NAME, runId], (r) => r.length === 1);
  // Silent past the default no-progress threshold (15 minutes), as the stuck tests age theirs.
  await env.DB.prepare(`UPDATE runs SET last_seen = last_seen - ?1, listed_at = (last_seen - ?1) - ((last_seen - ?1) % 60000) WHERE agent_name = ?2`)
    .bind(16 * MIN, STUCK_NAME)
    .run();
  await pollRows("SELECT 1 FROM op_ambiguities WHERE agent_name = ?", [NAME], (r) => r.length === 1);
  await pollRows("SELECT 1 FROM workspace_backups WHERE session_name = ?", [NAME], (r) => r.length === 1);
  await pollRows("SELECT 1 FROM runs WHERE agent_name = ?", [NAME], (r) => r.length >= 1);
  await pollRows("SELECT 1 FROM alert_deliveries WHERE agent_name = ? AND kind = 'exhausted'", [NAME], (r) => r.length >= 1);
});

afterAll(async () => {
  await (await getAgentByName(env.LossyAgent, STUCK_NAME)).release();
});

describe("every list saved views cover has one column declaration", () => {
  it("covers each such list but the events timeline", () => {
    expect(Object.keys(LIST_COLUMNS).sort()).toEqual(VIEW_LISTS.filter((l) => l !== "events").sort());
    expect(CASES.map((c) => c.list).sort()).toEqual(Object.keys(LIST_COLUMNS).sort());
  });
});

describe.each(CASES)("cols= on $list", ({ list, path, testId, pick }) => {
  it("shows exactly the picked columns (headers and every row's cells, labelled for the phone cards), after the row's own", async () => {
    const set = setOf(list);
    const page = await getText(withCols(path, pick.join(",")), "viewer");
    expect(page.status).toBe(200);
    const t = tableOf(page.text, testId);
    expect(t.dataCols).toBe(pick.join(","));
    expect(t.heads.map((h) => h.id)).toEqual([set.key.id, ...pick]);
    expect(t.rows.length, `${list} has rows to show`).toBeGreaterThan(0);
    for (const row of t.rows) {
      expect(row.map((c) => c.id)).toEqual([set.key.id, ...pick]);
      // Each cell's card label is its column's header.
      expect(row.map((c) => c.label)).toEqual(t.heads.map((h) => h.header));
    }
    // The chooser ticks what was picked, so Apply keeps it.
    const ticked = [...page.text.matchAll(/<input type="checkbox" name="cols" value="([^"]+)" checked/g)].map((m) => m[1]);
    expect(ticked).toEqual(pick);
  });

  it("shows every declared column without cols=, and the chooser offers each", async () => {
    const page = await getText(path, "viewer");
    const t = tableOf(page.text, testId);
    expect(t.dataCols).toBeNull();
    expect(t.heads.map((h) => h.id)).toEqual([setOf(list).key.id, ...columnIds(setOf(list))]);
    expect([...page.text.matchAll(/<input type="checkbox" name="cols" value="([^"]+)"/g)].map((m) => m[1])).toEqual(columnIds(setOf(list)));
  });

  it("takes repeated cols= (the chooser's checkboxes) like a comma list", async () => {
    const page = await getText(`${withCols(path, pick[0])}&cols=${pick[1]}`, "viewer");
    expect(tableOf(page.text, testId).dataCols).toBe(pick.join(","));
  });

  it("refuses a column the list does not have: a 400 that names the list's columns", async () => {
    for (const accept of ["application/json", "text/html"]) {
      const res = await call(withCols(path, `${pick[0]},password`), { as: "viewer", headers: { Accept: accept } });
      expect(res.status).toBe(400);
      const text = await res.text();
      expect(text).toContain(`cols must name columns of the ${list} list among ${columnIds(setOf(list)).join(", ")}`);
    }
  });

  it("downloads the picked columns' fields only, and refuses an unknown one", async () => {
    const set = setOf(list);
    const exportPath = withCols(path.replace(/^\/([a-z]+)/, `/export/$1`), pick.join(","));
    const res = await call(`${exportPath}&format=json`, { as: "viewer" });
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { cols?: string[]; items: Record<string, unknown>[] };
    expect(doc.cols).toEqual(pick);
    expect(doc.items.length).toBeGreaterThan(0);
    const allowed = new Set([set.key, ...set.columns.filter((c) => pick.includes(c.id))].flatMap((c) => c.fields));
    for (const item of doc.items) {
      for (const k of Object.keys(item)) expect(allowed.has(k), `${list} export field ${k}`).toBe(true);
      for (const f of set.key.fields) expect(item).toHaveProperty(f);
    }
    const bad = await call(withCols(`${path.replace(/^\/([a-z]+)/, "/export/$1")}`, "nope"), { as: "viewer", headers: { Accept: "application/json" } });
    expect(bad.status).toBe(400);
  });

  it("is kept by a saved view: its URL reproduces the columns", async () => {
    // A person of this file's own: opening a view makes it their last view of the list, which no other test sees.
    const query = `${new URL(`https://x${path}`).searchParams.toString()}&cols=${pick[0]}&cols=${pick[1]}`;
    const csrf = csrfFromPage((await asViewSaver("/")).text);
    const res = await asViewSaver("/views", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: ORIGIN, "X-CSRF-Token": csrf, Accept: "application/json" },
      body: new URLSearchParams({ name: `cols ${list} ${u}`, list, query }).toString(),
    });
    expect(res.status, res.text).toBe(201);
    const { value } = JSON.parse(res.text) as { value: { viewId: string } };
    const open = await asViewSaver(`/views/${value.viewId}`, { redirect: "manual" });
    expect(open.status).toBe(302);
    expect(open.location).toContain(`view=${value.viewId}`);
    const page = await asViewSaver(open.location!);
    expect(tableOf(page.text, testId).dataCols).toBe(pick.join(","));
  });
});

it("a list without a column choice (events) refuses cols= on its download with a sentence", async () => {
  const res = await call("/export/events?cols=type", { as: "viewer", headers: { Accept: "application/json" } });
  expect(res.status).toBe(400);
  expect(await res.text()).toContain("The events list has no column choice");
});
