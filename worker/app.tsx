import { Hono } from "hono";
import { ambiguousOwnerSentence } from "../console/words";
import { isAmbiguousOwner, isBadRequest } from "../src/store/read-models/errors";
import { auth, csrf, respondProblem } from "./auth";
import { ConfigError, consoleConfig } from "./config";
import { respondRefusal } from "./http/refusal";
import { actions } from "./routes/actions";
import { agents } from "./routes/agents";
import { alerts } from "./routes/alerts";
import { api } from "./routes/api";
import { awake } from "./routes/awake";
import { bulk } from "./routes/bulk";
import type { ConsoleEnv } from "./routes/context";
import { deploys } from "./routes/deploys";
import { exportRoute } from "./routes/export";
import { pages } from "./routes/pages";
import { problem, refuse } from "./routes/render";
import { search } from "./routes/search";
import { stuck } from "./routes/stuck";
import { savedViews, views } from "./routes/views";
import { securityHeaders } from "./security-headers";

/**
 * The console Worker's HTTP app. Every response carries the security headers
 * (CSP, no framing, nosniff, no-store). Only /health is public; everything else
 * is behind auth (Access JWT or explicit dev mode), and every state-changing
 * request is CSRF-checked.
 */
export const app = new Hono<ConsoleEnv>();

// First, so refusals from auth, 404s and 500s from onError get the headers too.
app.use("*", securityHeaders());
// A malformed setting refuses every request, /health included (worker/config.ts): names here, details in the log.
app.use("*", async (c, next) => {
  try {
    consoleConfig(c.env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const message = `This console is not running: its configuration refuses ${e.variables.join(", ")}. The operator's log says what each must be.`;
    return respondProblem(c, { status: 503, code: "config_invalid", title: "Configuration refused", message });
  }
  await next();
});
app.get("/health", (c) => c.json({ ok: true }));
// Other methods on the public path would reach csrf() with no signed-in user: answer them here.
app.all("/health", (c) => {
  c.header("Allow", "GET, HEAD");
  return refuse(c, { status: 405, code: "method_not_allowed", message: `/health answers GET only, not ${c.req.method}.` });
});
app.use("*", auth());
app.use("*", csrf());
// After auth: every page a browser loads knows the identity's saved views (nav), and a bare list restores its last one.
app.use("*", savedViews());
app.route("/", api);
app.route("/", actions);
app.route("/", agents);
app.route("/", awake);
app.route("/", alerts);
app.route("/", bulk);
app.route("/", deploys);
app.route("/", exportRoute);
app.route("/", pages);
app.route("/", search);
app.route("/", stuck);
app.route("/", views);

app.notFound((c) => problem(c, 404, `There is no page at ${c.req.path}.`));

// Bad input is the caller's to fix (400, with the reason). Anything else is ours: logged, answered plainly, never with internals.
app.onError((err, c) => {
  if (isBadRequest(err)) return problem(c, 400, err.message);
  if (isAmbiguousOwner(err)) return problem(c, 400, ambiguousOwnerSentence(err));
  console.error(`[worker] ${c.req.method} ${c.req.path}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  // Plain text for people: rendering a console page could fail the same way. JSON callers get the one body.
  const message = "Something went wrong on our side. It has been logged.";
  return respondRefusal(c, { status: 500, code: "internal", message }, { page: () => c.text(message, 500) });
});
