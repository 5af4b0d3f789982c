import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { deleteView, forgetView, getView, rememberView, saveView, VIEWS_PER_SHELF, viewName, viewQuery, viewsFor } from "../../src/store/views";

// Saved views in real D1: who sees which view (personal only its owner, team everyone), names unique per shelf,
// who may delete, and the last view per identity and list, with what each write costs.

const u = crypto.randomUUID().slice(0, 8);
const ann = `ann-${u}@example.com`;
const bob = `bob-${u}@example.com`;
const now = 1_780_000_000_000;

const save = (owner: string, name: string, shelf: "personal" | "team" = "personal", list = "incidents", query = "status=open") =>
  saveView(env.DB, { owner, shelf, list, name, query }, now);

async function saved(owner: string, name: string, shelf: "personal" | "team" = "personal", list = "incidents", query = "status=open") {
  const r = await save(owner, name, shelf, list, query);
  if (!r.ok) throw new Error(`${name} not saved: ${r.reason}`);
  return r.view;
}

describe("saved views", () => {
  it("show a personal view to its owner only, and a team view to everyone", async () => {
    const mine = await saved(ann, `open ${u}`);
    const team = await saved(ann, `team open ${u}`, "team");
    const annSees = (await viewsFor(env.DB, ann)).map((v) => v.viewId);
    const bobSees = (await viewsFor(env.DB, bob)).map((v) => v.viewId);
    expect(annSees).toEqual(expect.arrayContaining([mine.viewId, team.viewId]));
    expect(bobSees).toContain(team.viewId);
    expect(bobSees).not.toContain(mine.viewId);
    expect(await getView(env.DB, mine.viewId, bob)).toBeNull();
    expect(await getView(env.DB, team.viewId, bob)).toMatchObject({
      name: `team open ${u}`,
      shelf: "team",
      owner: ann,
      list: "incidents",
      query: "status=open",
    });
    // Personal first, then the team's, each by name.
    const listed = (await viewsFor(env.DB, ann)).filter((v) => v.name.endsWith(u));
    expect(listed.map((v) => v.shelf)).toEqual(["personal", "team"]);
  });

  it("keep names unique per shelf: a second 'x' on the same shelf is refused, on another person's shelf or the team's it is fine", async () => {
    const name = `dup ${u}`;
    await saved(ann, name);
    expect(await save(ann, name, "personal", "runs")).toEqual({ ok: false, reason: "name_taken", shelf: "personal", name });
    expect((await save(bob, name)).ok).toBe(true);
    expect((await save(ann, name, "team")).ok).toBe(true);
    expect(await save(bob, name, "team")).toEqual({ ok: false, reason: "name_taken", shelf: "team", name });
    expect((await viewsFor(env.DB, ann)).filter((v) => v.name === name)).toHaveLength(2);
  });

  it("stop a shelf at VIEWS_PER_SHELF views", async () => {
    const carl = `carl-${u}@example.com`;
    for (let i = 0; i < VIEWS_PER_SHELF; i++) await saved(carl, `v${i}`);
    expect(await save(carl, "one more")).toEqual({ ok: false, reason: "shelf_full", shelf: "personal", name: "one more" });
    expect((await viewsFor(env.DB, carl)).filter((v) => v.shelf === "personal")).toHaveLength(VIEWS_PER_SHELF);
  });

  it("let only the owner delete a personal view, and the owner or an operator a team view", async () => {
    const mine = await saved(ann, `del ${u}`);
    const team = await saved(ann, `team del ${u}`, "team");
    const team2 = await saved(ann, `team del2 ${u}`, "team");
    // Someone else's personal view is not even found: its existence is not disclosed.
    expect(await deleteView(env.DB, mine.viewId, { email: bob, mayTidyTeam: true })).toEqual({ ok: false, reason: "not_found" });
    expect(await deleteView(env.DB, team.viewId, { email: bob, mayTidyTeam: false })).toEqual({ ok: false, reason: "not_permitted" });
    expect((await deleteView(env.DB, team.viewId, { email: bob, mayTidyTeam: true })).ok).toBe(true);
    expect((await deleteView(env.DB, team2.viewId, { email: ann, mayTidyTeam: false })).ok).toBe(true);
    expect((await deleteView(env.DB, mine.viewId, { email: ann, mayTidyTeam: false })).ok).toBe(true);
    for (const v of [mine, team, team2]) expect(await getView(env.DB, v.viewId, ann)).toBeNull();
  });

  it("remember the last view per identity and list, writing a row only when it changes", async () => {
    const dana = `dana-${u}@example.com`;
    const a = await saved(dana, "a");
    const b = await saved(dana, "b");
    const r = await saved(dana, "r", "personal", "runs", "outcome=running");
    await rememberView(env.DB, dana, a);
    await rememberView(env.DB, dana, r);
    const last = async () => (await viewsFor(env.DB, dana)).filter((v) => v.last).map((v) => v.name);
    expect(await last()).toEqual(["a", "r"]);
    await rememberView(env.DB, dana, b);
    expect(await last()).toEqual(["b", "r"]);
    // Another identity's last view is its own.
    expect((await viewsFor(env.DB, ann)).some((v) => v.viewId === b.viewId)).toBe(false);
    await forgetView(env.DB, dana, "incidents");
    expect(await last()).toEqual(["r"]);

    // The cost: what D1 reports for each write.
    const run = (sql: string, ...binds: unknown[]) =>
      env.DB.prepare(sql)
        .bind(...binds)
        .run();
    const same = await run(
      "INSERT INTO view_last_used (email, list, view_id) VALUES (?, ?, ?) ON CONFLICT (email, list) DO UPDATE SET view_id = excluded.view_id WHERE view_id <> excluded.view_id",
      dana,
      "runs",
      r.viewId,
    );
    expect(same.meta.rows_written).toBe(0);
    // A saved view is one row, its primary key's index entry and its (shelf, name) entry.
    const insert = await run(
      "INSERT INTO saved_views (view_id, shelf, owner, list, name, query, created_at) VALUES (?, ?, ?, 'runs', 'cost', '', 0)",
      `cost-${u}`,
      dana,
      dana,
    );
    expect(insert.meta.rows_written).toBe(3);
  });

  it("validate names and keep only filters in the query", async () => {
    for (const bad of ["", "   ", "x".repeat(61), "<script>", "-leading dash", "tab\there", "semi;colon"]) expect(viewName.safeParse(bad).success).toBe(false);
    for (const good of ["Open chat incidents", "p1 (EU)", "Zoë's runs", "ops/eu-west #2"]) expect(viewName.safeParse(good).success).toBe(true);
    expect(viewQuery.parse("?status=open&cursor=abc&view=v1&reason=&kind=chat")).toBe("status=open&kind=chat");
    expect(viewQuery.safeParse("a=".repeat(1001)).success).toBe(false);
    await expect(save(ann, "<b>bold</b>")).rejects.toThrow(/letters, digits/);
  });
});
