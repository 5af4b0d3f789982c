import { Hono, type MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { z } from "zod";
import { type ViewLink, ViewsMenuItems } from "../../console/components/views";
import { LISTS, NO_VIEW, plainHref, VIEW_LISTS, type ViewList, viewHref, viewListAt, viewTargetHref } from "../../console/links";
import { ViewsPage } from "../../console/pages/views";
import { teamViewRoleSentence, viewRefusalSentence, viewSaveRefusalSentence } from "../../console/words";
import { type SavedView, viewName, viewQuery } from "../../src/store/console-store";
import { answerForm } from "../http/answer";
import { type ConsoleContext, type ConsoleEnv, pageContext, storeOf, wantsJson } from "./context";
import { page, problem, refuse } from "./render";

/**
 * Saved views (issue 18, item 5): a list's filters under a name, personal or for the team, at a permanent address
 * (`/views/:id` redirects to the list with the view's query and `view=<id>`). Not admin actions: nothing reaches an
 * agent, so they are not audited; every change is CSRF-checked like any POST. Any signed-in role saves personal
 * views; team views need operator.
 */
export const views = new Hono<ConsoleEnv>();

const asLink = (v: Pick<SavedView, "viewId" | "name" | "list" | "shelf">): ViewLink => ({
  viewId: v.viewId,
  name: v.name,
  list: v.list as ViewList,
  shelf: v.shelf,
});
/** Views of lists this console has (a view saved for a list since removed is left out of pages). */
const ofKnownList = (v: Pick<SavedView, "list">) => (VIEW_LISTS as readonly string[]).includes(v.list);

/**
 * For a list page a browser loads: a list opened with no query at all restores the identity's last view of it (a
 * redirect to that view's URL, which the marker then names); `?view=<id>` marks the page and records the view as the
 * list's last; `?view=none` is the plain list (nothing restored, nothing read). Other pages cost nothing; a bare list two primary-key reads; a list opened through a view two more,
 * and a row written only when the list's last view changes. (The nav's menu loads its views only when opened.)
 */
export function savedViews(): MiddlewareHandler<ConsoleEnv> {
  return createMiddleware<ConsoleEnv>(async (c, next) => {
    const list = viewListAt(c.req.path);
    if (!list || c.req.method !== "GET" || answerForm(c.req) !== "page" || !c.var.user) return next();
    const email = c.var.user.email;
    const url = new URL(c.req.url);
    if (url.search === "" || url.search === "?") {
      const last = await storeOf(c).views.last(email, list);
      if (last && ofKnownList(last)) return c.redirect(viewTargetHref(asLinkWithQuery(last)), 302);
    }
    const id = url.searchParams.get("view");
    const found = id && id !== NO_VIEW ? await storeOf(c).views.get(id, email) : null;
    const active = found?.list === list ? found : null;
    if (active) await storeOf(c).views.remember(email, active);
    // A query too long to keep is shown as asked, with nothing offered to save.
    const query = viewQuery.safeParse(url.search);
    c.set("listView", { list, query: query.success ? query.data : null, active: active ? asLink(active) : null });
    await next();
  });
}

const message = (e: z.ZodError) => e.issues.map((i) => i.message).join("; ");

async function readForm(c: ConsoleContext): Promise<Record<string, unknown> | null> {
  try {
    return await c.req.parseBody();
  } catch {
    return null;
  }
}

const saveForm = z.object({
  name: viewName,
  shelf: z.preprocess((v) => (v === undefined || v === "" ? "personal" : v), z.enum(["personal", "team"], { error: "shelf must be personal or team" })),
  list: z.enum(VIEW_LISTS, { error: `list must be one of ${VIEW_LISTS.join(", ")}` }),
  query: z.preprocess((v) => v ?? "", z.string({ error: "query must be text" }).pipe(viewQuery)),
});

/** The identity's views: a page of them with delete where allowed, or JSON `{ items }` (each with its address, `href`). */
views.get("/views", async (c) => {
  const items = await storeOf(c).views.of(c.var.user.email);
  if (wantsJson(c)) return c.json({ items: items.map((v) => ({ ...v, href: viewHref(v.viewId) })) });
  return page(c, <ViewsPage ctx={pageContext(c)} views={items} />);
});

/** The nav menu's items: the identity's views, personal then team (an htmx partial). */
views.get("/partials/views", async (c) => {
  const mine = (await storeOf(c).views.of(c.var.user.email)).filter(ofKnownList);
  return c.html(<ViewsMenuItems views={mine.map(asLink)} />);
});

/** Saves the list's filters as a view: 201 JSON, or a redirect to the list opened through it (303). */
views.post("/views", async (c) => {
  const body = await readForm(c);
  if (!body) return problem(c, 400, "the request body could not be read as a form: send application/x-www-form-urlencoded");
  const form = saveForm.safeParse(body);
  if (!form.success) return problem(c, 400, message(form.error));
  const user = c.var.user;
  if (form.data.shelf === "team" && user.role !== "operator") return refuse(c, { status: 403, code: "not_permitted", message: teamViewRoleSentence(user) });
  const saved = await storeOf(c).views.save({ owner: user.email, ...form.data }, Date.now());
  if (!saved.ok) return refuse(c, { status: 409, code: saved.reason, message: viewSaveRefusalSentence(saved) });
  const target = viewTargetHref(asLinkWithQuery(saved.view));
  if (wantsJson(c)) return c.json({ ok: true, value: { ...saved.view, href: target } }, 201);
  return c.redirect(target, 303);
});

/** Forgets the identity's last view of a list, then shows the list plain (303 to `?view=none`). */
views.post("/views/forget", async (c) => {
  const body = await readForm(c);
  const list = z.enum(VIEW_LISTS).safeParse(body?.list);
  if (!list.success) return problem(c, 400, `list must be one of ${VIEW_LISTS.join(", ")}`);
  await storeOf(c).views.forget(c.var.user.email, list.data);
  if (wantsJson(c)) return c.json({ ok: true, value: { list: list.data } });
  return c.redirect(plainHref(LISTS[list.data]), 303);
});

/** A view's permanent address: its list with its filters (302), or the view as JSON. */
views.get("/views/:viewId", async (c) => {
  const id = c.req.param("viewId");
  const view = await storeOf(c).views.get(id, c.var.user.email);
  if (!view || !(VIEW_LISTS as readonly string[]).includes(view.list))
    return refuse(c, { status: 404, code: "not_found", message: viewRefusalSentence("not_found", id, c.var.user) });
  const target = viewTargetHref(asLinkWithQuery(view));
  if (wantsJson(c)) return c.json({ ok: true, value: { ...view, href: target } });
  return c.redirect(target, 302);
});

/** Deletes a view (its owner; a team view also any operator), then back to the views (303). */
views.post("/views/:viewId/delete", async (c) => {
  const id = c.req.param("viewId");
  const user = c.var.user;
  const r = await storeOf(c).views.delete(id, { email: user.email, mayTidyTeam: user.role === "operator" });
  if (!r.ok) return refuse(c, { status: r.reason === "not_found" ? 404 : 403, code: r.reason, message: viewRefusalSentence(r.reason, id, user) });
  if (wantsJson(c)) return c.json({ ok: true, value: { viewId: id } });
  return c.redirect(LISTS.views, 303);
});

function asLinkWithQuery(v: SavedView) {
  return { ...asLink(v), query: v.query };
}
