import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId } from "../html";
import { accessToken, csrfFromPage, exhaustedChatIncident, ORIGIN, uid } from "./harness";

// Saved views through the real Worker with real Access tokens: three signed-in people (two viewers and an
// operator; the test Worker's ROLES makes every @example.com address a viewer). Asserts what each one sees and may
// do, by data-testid and the JSON answers, on a foreign fixture agent's incidents (ProbeAgent).

const worker = (exports as unknown as { default: { fetch(request: Request): Promise<Response> } }).default;
const u = uid();
const PEOPLE = { ann: `ann-${u}@example.com`, bob: `bob-${u}@example.com`, op: "operator@example.com" } as const;
type Person = keyof typeof PEOPLE;

async function as(who: Person, path: string, init: { method?: string; headers?: Record<string, string>; body?: string; follow?: boolean } = {}) {
  const headers = new Headers(init.headers);
  headers.set("Cf-Access-Jwt-Assertion", await accessToken(PEOPLE[who]));
  const res = await worker.fetch(
    new Request(`${ORIGIN}${path}`, { method: init.method ?? "GET", headers, body: init.body, redirect: init.follow ? "follow" : "manual" }),
  );
  expect(res.status, `${init.method ?? "GET"} ${path} as ${who}`).toBeLessThan(500);
  return res;
}
const page = async (who: Person, path: string) => {
  const res = await as(who, path);
  return { status: res.status, location: res.headers.get("location"), html: await res.text() };
};

const csrf: Partial<Record<Person, string>> = {};
async function post(who: Person, path: string, form: Record<string, string>, opts: { json?: boolean; token?: string | null } = {}) {
  csrf[who] ??= csrfFromPage((await page(who, "/")).html);
  const headers: Record<string, string> = { "Content-Type": "application/x-www-form-urlencoded", Origin: ORIGIN };
  if (opts.token !== null) headers["X-CSRF-Token"] = opts.token ?? csrf[who]!;
  if (opts.json ?? true) headers.Accept = "application/json";
  return as(who, path, { method: "POST", headers, body: new URLSearchParams(form).toString() });
}
type Saved = { viewId: string; name: string; shelf: string; list: string; query: string; owner: string; href: string };
async function save(who: Person, form: Record<string, string>) {
  const res = await post(who, "/views", form);
  const body = (await res.json()) as { ok: true; value: Saved } | { ok: false; error: { code: string; message: string } };
  return { status: res.status, body };
}
async function saved(who: Person, form: Record<string, string>): Promise<Saved> {
  const r = await save(who, form);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body as { value: Saved }).value;
}
/** The views the nav's menu lists for `who` (its items load by htmx when the menu is opened). */
async function navViewIds(who: Person) {
  const res = await as(who, "/partials/views", { headers: { "HX-Request": "true" } });
  expect(res.status).toBe(200);
  return [...(await res.text()).matchAll(/data-testid="view-link" data-view-id="([^"]+)"/g)].map((m) => m[1]);
}
const markerOf = (html: string) => /data-testid="view-marker" data-view-id="([^"]+)"/.exec(html)?.[1] ?? null;
const incidentIds = (html: string) => {
  const table = /<table data-testid="incidents"[\s\S]*?<\/table>/.exec(html)?.[0] ?? "";
  return [...table.matchAll(/<a class="mono" href="\/incidents\/([^"?]+)/g)].map((m) => decodeURIComponent(m[1]!));
};

let reason: string;
let incidentId: string;
let other: string;

beforeAll(async () => {
  await publishEnvTeamKeys();
  reason = `views_${u}`;
  incidentId = (await exhaustedChatIncident(`probe-views-${u}`, { reason })).incidentId;
  other = (await exhaustedChatIncident(`probe-views2-${u}`, { reason: `${reason}_other` })).incidentId;
});

describe("saving a view", () => {
  it("keeps a list's filters under a name: its URL reproduces them, the nav shows it, and the list is marked", async () => {
    const v = await saved("ann", { name: `exhausted ${u}`, list: "incidents", query: `?reason=${reason}&status=exhausted&cursor=xyz` });
    expect(v).toMatchObject({ shelf: "personal", owner: PEOPLE.ann, list: "incidents", query: `reason=${reason}&status=exhausted` });

    const open = await page("ann", `/views/${v.viewId}`);
    expect(open.status).toBe(302);
    expect(open.location).toBe(`/incidents?reason=${reason}&status=exhausted&view=${v.viewId}`);
    const list = await page("ann", open.location!);
    expect(list.status).toBe(200);
    expect(incidentIds(list.html)).toEqual([incidentId]);
    expect(markerOf(list.html)).toBe(v.viewId);
    // Every page has the nav's menu, and the menu lists it.
    expect(byTestId(list.html, "views-menu")).toBeDefined();
    expect(byTestId((await page("ann", "/")).html, "views-menu")).toBeDefined();
    expect(await navViewIds("ann")).toContain(v.viewId);
  });

  it("from the list's own form: a redirect to the list opened through the new view", async () => {
    const res = await post("ann", "/views", { name: `form ${u}`, list: "incidents", query: `reason=${reason}_other` }, { json: false });
    expect(res.status).toBe(303);
    const location = res.headers.get("location")!;
    expect(location).toMatch(new RegExp(`^/incidents\\?reason=${reason}_other&view=[0-9a-f-]{36}$`));
    expect(incidentIds((await page("ann", location)).html)).toEqual([other]);
  });

  it("refuses a bad name (400), a taken name (409), an unknown list (400), and a viewer's team view (403), each with a sentence", async () => {
    for (const name of ["", "<img src=x>", "x".repeat(61)]) {
      const r = await save("ann", { name, list: "incidents", query: "" });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ ok: false, error: { code: "invalid_input", message: expect.stringMatching(/name/) } });
    }
    await saved("ann", { name: `taken ${u}`, list: "runs", query: "outcome=running" });
    const dup = await save("ann", { name: `taken ${u}`, list: "incidents", query: "" });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ ok: false, error: { code: "name_taken", message: expect.stringContaining(`taken ${u}`) } });
    // Another person's shelf is their own: the same name is free there.
    expect((await save("bob", { name: `taken ${u}`, list: "incidents", query: "" })).status).toBe(201);
    expect((await save("ann", { name: `l ${u}`, list: "bulk", query: "" })).status).toBe(400);
    const team = await save("ann", { name: `team ${u}`, shelf: "team", list: "incidents", query: "" });
    expect(team.status).toBe(403);
    expect(team.body).toMatchObject({ ok: false, error: { code: "not_permitted" } });
  });

  it("is a CSRF-checked change: no token, no view", async () => {
    const res = await post("ann", "/views", { name: `nocsrf ${u}`, list: "incidents", query: "" }, { token: null });
    expect(res.status).toBe(403);
    const listed = (await (await as("ann", "/views", { headers: { Accept: "application/json" } })).json()) as { items: Saved[] };
    expect(listed.items.map((v) => v.name)).not.toContain(`nocsrf ${u}`);
    for (const v of listed.items) expect(v.href).toBe(`/views/${v.viewId}`);
  });
});

describe("who sees and deletes a view", () => {
  it("shows a personal view to its owner only, and a team view to everyone", async () => {
    const mine = await saved("ann", { name: `mine ${u}`, list: "incidents", query: "status=open" });
    const team = await saved("op", { name: `team ${u}`, shelf: "team", list: "incidents", query: "status=exhausted" });
    expect(team.shelf).toBe("team");
    const bobNav = await navViewIds("bob");
    expect(bobNav).toContain(team.viewId);
    expect(bobNav).not.toContain(mine.viewId);
    expect((await page("bob", `/views/${mine.viewId}`)).status).toBe(404);
    expect((await page("bob", `/views/${team.viewId}`)).status).toBe(302);
    expect(await navViewIds("ann")).toEqual(expect.arrayContaining([mine.viewId, team.viewId]));
  });

  it("lets only the owner delete a personal view, and a team view its owner or an operator", async () => {
    const mine = await saved("ann", { name: `del ${u}`, list: "runs", query: "" });
    const team = await saved("op", { name: `team del ${u}`, shelf: "team", list: "runs", query: "" });
    // Another person's personal view is not found (not even its existence is disclosed); a viewer may not delete a team view.
    expect((await post("bob", `/views/${mine.viewId}/delete`, {})).status).toBe(404);
    expect((await post("op", `/views/${mine.viewId}/delete`, {})).status).toBe(404);
    const refused = await post("bob", `/views/${team.viewId}/delete`, {});
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ ok: false, error: { code: "not_permitted" } });
    expect((await post("ann", `/views/${mine.viewId}/delete`, {})).status).toBe(200);
    expect((await post("op", `/views/${team.viewId}/delete`, {})).status).toBe(200);
    expect((await page("ann", `/views/${mine.viewId}`)).status).toBe(404);
    expect((await page("bob", `/views/${team.viewId}`)).status).toBe(404);
  });
});

describe("the last view", () => {
  it("is restored when its list is opened with no query, marked, and forgotten by clear", async () => {
    const v = await saved("bob", { name: `last ${u}`, list: "incidents", query: `reason=${reason}` });
    // Before any view was opened, the bare list is the bare list.
    expect((await page("bob", "/incidents")).status).toBe(200);
    await page("bob", `/incidents?reason=${reason}&view=${v.viewId}`);
    const bare = await page("bob", "/incidents");
    expect(bare.status).toBe(302);
    expect(bare.location).toBe(`/incidents?reason=${reason}&view=${v.viewId}`);
    // Per identity: the operator, who opened no view of incidents, gets the bare list.
    expect((await page("op", "/incidents")).status).toBe(200);
    // A list opened with filters of its own is shown as asked, without a marker.
    const filtered = await page("bob", "/incidents?status=open");
    expect(filtered.status).toBe(200);
    expect(markerOf(filtered.html)).toBeNull();
    // Clear: forgets it, and shows the list plain; the bare list is unfiltered again.
    const clear = await post("bob", "/views/forget", { list: "incidents" }, { json: false });
    expect(clear.status).toBe(303);
    expect(clear.headers.get("location")).toBe("/incidents?view=none");
    expect((await page("bob", "/incidents")).status).toBe(200);
    expect((await post("bob", "/views/forget", { list: "nope" })).status).toBe(400);
  });

  it("is not restored by the filter form's Clear (view=none), while the bare list (the nav's link) still restores it", async () => {
    const v = await saved("bob", { name: `plain ${u}`, list: "incidents", query: `reason=${reason}_other` });
    const opened = await page("bob", `/incidents?reason=${reason}_other&view=${v.viewId}`);
    // The form's Clear on a list opened through a view leads to the plain list, not back to the view.
    const clearHref = /<a href="([^"]+)" data-testid="filters-clear">/.exec(opened.html)?.[1];
    expect(clearHref).toBe("/incidents?view=none");
    const plain = await page("bob", clearHref!);
    expect(plain.status).toBe(200);
    expect(markerOf(plain.html)).toBeNull();
    expect(incidentIds(plain.html)).toEqual(expect.arrayContaining([incidentId, other]));
    // Seeing it plain forgets nothing: the nav's bare link still opens the last view.
    expect((await page("bob", "/incidents")).location).toBe(`/incidents?reason=${reason}_other&view=${v.viewId}`);
    // And view=none is not part of what a save keeps.
    expect((await saved("bob", { name: `plain2 ${u}`, list: "incidents", query: "view=none&status=open" })).query).toBe("status=open");
    await post("bob", "/views/forget", { list: "incidents" });
  });

  it("is stored in D1 per identity and list, and restored only for a browser's page, not for JSON", async () => {
    const v = await saved("ann", { name: `json ${u}`, list: "runs", query: "outcome=running" });
    await page("ann", `/runs?outcome=running&view=${v.viewId}`);
    const row = await env.DB.prepare("SELECT view_id FROM view_last_used WHERE email = ? AND list = 'runs'").bind(PEOPLE.ann).first<{ view_id: string }>();
    expect(row?.view_id).toBe(v.viewId);
    const json = await as("ann", "/runs", { headers: { Accept: "application/json" } });
    expect(json.status).toBe(200);
  });
});

describe("columns", () => {
  it("cols= shows only the chosen columns of the incidents list, and a saved view keeps them", async () => {
    const v = await saved("ann", { name: `cols ${u}`, list: "incidents", query: `reason=${reason}&cols=status&cols=reason` });
    const list = await page("ann", (await page("ann", `/views/${v.viewId}`)).location!);
    expect(/<table data-testid="incidents" data-cols="([^"]*)"/.exec(list.html)?.[1]).toBe("status,reason");
    const head = /<table data-testid="incidents"[\s\S]*?<\/thead>/.exec(list.html)![0];
    expect([...head.matchAll(/<th[^>]*>\s*([a-z ]+?)\s*<\/th>/g)].map((m) => m[1])).toEqual(["incident", "status", "reason"]);
    const bad = await as("ann", "/incidents?cols=status,password", { headers: { Accept: "application/json" } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ ok: false, error: { code: "invalid_input", message: expect.stringContaining("cols") } });
  });
});
