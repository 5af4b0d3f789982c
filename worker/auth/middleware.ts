import type { Context, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { consoleConfig } from "../config";
import { type AuthBindings, type AuthConfig, type AuthConfigResult, CONFIG_ERROR_MESSAGE, describeConfigProblems, readAuthConfig } from "./config";
import { csrfKey, issueCsrfToken } from "./csrf";
import { parseEmail } from "./identity";
import { defaultJwksCache, type JwksCache } from "./jwks";
import { groupsOf, type JwtFailure, verifyAccessJwt } from "./jwt";
import { DEV_MODE_LOCAL_ONLY_MESSAGE, notLocalReason } from "./local-only";
import { respondProblem } from "./problem";
import { hasRole, roleFor } from "./roles";
import { readAccessToken } from "./token";
import type { AuthEnv, AuthUser, Role } from "./types";

/** The only paths served without identity. */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set(["/health"]);

export type AuthOptions = {
  /** Settings to use instead of `c.env` (tests, or an app that computes them). */
  bindings?: AuthBindings | ((c: Context) => AuthBindings);
  /** JWKS cache; default: one per isolate. */
  jwks?: JwksCache;
  /** Clock skew tolerated on `exp`/`nbf`, seconds. Default 30. */
  clockSkewSec?: number;
};

/** What a person is told for each refused token (401). */
const TOKEN_MESSAGES: Record<Exclude<JwtFailure, "keys_unavailable">, string> = {
  malformed: "Your sign-in token could not be read (it is not a well-formed Cloudflare Access token). Reload the page to sign in again.",
  unsupported_algorithm: "Your sign-in token uses a signing algorithm this console does not accept (only RS256).",
  unknown_key: "Your sign-in token has a bad signature: it was signed with a key your Access team does not publish.",
  bad_signature: "Your sign-in token has a bad signature: it was not signed by your Cloudflare Access team, or it was altered.",
  wrong_issuer: "Your sign-in token was issued by a different Cloudflare Access team (wrong issuer).",
  wrong_audience: "Your sign-in token was issued for a different Access application (wrong audience).",
  expired: "Your sign-in has expired. Reload the page to sign in again.",
  not_yet_valid: "Your sign-in token is not valid yet; the clocks of Access and this console disagree. Try again in a minute.",
};

const MISSING_TOKEN_MESSAGE =
  "You are not signed in: this request carried no Cloudflare Access token (no Cf-Access-Jwt-Assertion header or CF_Authorization cookie). Open the console through its Access-protected address to sign in.";

/** What this isolate has already logged: a misconfiguration is logged once per `key`, not once per request. */
const logged = new Set<string>();
function logOnce(key: string, line: string, log: (line: string) => void = console.error) {
  if (logged.has(key)) return;
  logged.add(key);
  log(line);
}

type Identified = { ok: true; user: AuthUser } | { ok: false; response: Response | Promise<Response> };

async function identifyWithAccess(c: Context, config: Extract<AuthConfig, { mode: "access" }>, options: AuthOptions): Promise<Identified> {
  const token = readAccessToken(c);
  if (!token) return { ok: false, response: respondProblem(c, { status: 401, code: "missing", title: "Sign-in required", message: MISSING_TOKEN_MESSAGE }) };

  const result = await verifyAccessJwt(token, {
    teamDomain: config.teamDomain,
    audience: config.audience,
    jwksUrl: config.jwksUrl,
    clockSkewSec: options.clockSkewSec,
    jwks: options.jwks ?? defaultJwksCache,
  });
  if (!result.ok) {
    if (result.reason === "keys_unavailable") {
      console.error(`[auth] ${result.detail}`);
      const message = "Sign-in cannot be checked right now: the console could not fetch the signing keys of your Access team. Try again shortly.";
      return { ok: false, response: respondProblem(c, { status: 503, code: "keys_unavailable", title: "Sign-in unavailable", message }) };
    }
    return { ok: false, response: respondProblem(c, { status: 401, code: result.reason, title: "Sign-in required", message: TOKEN_MESSAGES[result.reason] }) };
  }

  if (!result.claims.email?.trim()) {
    const message = "This Access token carries no email (for example a service token); the console needs a person's identity.";
    return { ok: false, response: respondProblem(c, { status: 403, code: "no_email", title: "Access denied", message, signOut: true }) };
  }
  const parsed = parseEmail(result.claims.email);
  if (!parsed.ok) {
    const message = `The email in your sign-in token ${parsed.problem}, so the console cannot match it to a role. Sign in with a plain address such as name@example.com.`;
    return { ok: false, response: respondProblem(c, { status: 403, code: "bad_email", title: "Access denied", message, signOut: true }) };
  }
  const email = parsed.value.address;
  const role = roleFor(config.roles, { email, groups: groupsOf(result.claims) });
  if (!role) {
    const message = `${email} is signed in but has no role in this console. Ask an admin to add you to ROLES as viewer or operator.`;
    return { ok: false, response: respondProblem(c, { status: 403, code: "no_role", title: "Access denied", message, email, signOut: true }) };
  }
  return { ok: true, user: { email, role, via: "access" } };
}

/**
 * Establishes who is calling and sets `c.var.user`, `c.var.devAuth` and `c.var.csrfToken`.
 * AUTH_MODE=access (the default) verifies the Cloudflare Access JWT and maps the email to a role;
 * AUTH_MODE=dev uses DEV_USER/DEV_ROLE and answers only requests addressed to loopback (see local-only.ts).
 * Only `/health` is exempt. Refusals: 401 (no or invalid token), 403 (no role, or dev mode reached from
 * elsewhere), 503 (auth not configured, or signing keys unreachable), each in words; a configuration
 * problem is described only in the log.
 */
export function auth(options: AuthOptions = {}): MiddlewareHandler<AuthEnv> {
  return createMiddleware<AuthEnv>(async (c, next) => {
    if (PUBLIC_PATHS.has(c.req.path)) return next();

    // The console's settings are parsed once (worker/config.ts); explicit bindings are for apps that mount auth() alone.
    const bindings = typeof options.bindings === "function" ? options.bindings(c) : options.bindings;
    const read: AuthConfigResult = bindings ? readAuthConfig(bindings) : { ok: true, config: consoleConfig(c.env).auth };
    if (!read.ok) {
      // The details can quote ROLES entries and domains: they go to the log, visitors get a generic sentence.
      const details = `[auth] ${describeConfigProblems(read.problems)}`;
      logOnce(details, details);
      return respondProblem(c, { status: 503, code: "auth_not_configured", title: "Sign-in not configured", message: CONFIG_ERROR_MESSAGE });
    }
    const config = read.config;

    let user: AuthUser;
    if (config.mode === "dev") {
      // No sign-in in dev mode, so it must never answer a rebinding page or a deployed address.
      const notLocal = notLocalReason(c.req.raw);
      if (notLocal) {
        logOnce(
          "dev_mode_local_only",
          `[auth] AUTH_MODE=dev refused a request that is not local (${notLocal}); dev mode only answers on loopback addresses (logged once)`,
          console.warn,
        );
        return respondProblem(c, { status: 403, code: "dev_mode_local_only", title: "Local development only", message: DEV_MODE_LOCAL_ONLY_MESSAGE });
      }
      user = { email: config.devUser, role: config.devRole, via: "dev" };
    } else {
      const identified = await identifyWithAccess(c, config, options);
      if (!identified.ok) return identified.response;
      user = identified.user;
    }

    const key = await csrfKey(config.csrfSecret);
    c.set("user", user);
    c.set("devAuth", config.mode === "dev");
    c.set("csrfKey", key);
    c.set("csrfToken", await issueCsrfToken(key, user.email));
    await next();
  });
}

/** Lets the request through only when `c.var.user` holds `role` (operator implies viewer); 403 page otherwise. Mount after `auth()`. */
export function requireRole(role: Role): MiddlewareHandler<AuthEnv> {
  return createMiddleware<AuthEnv>(async (c, next) => {
    const user = c.get("user");
    if (!user) throw new Error("requireRole() needs the auth() middleware to run first");
    if (hasRole(user.role, role)) return next();
    const message = `${user.email} has the ${user.role} role; this needs the ${role} role. Ask an admin to add you to ROLES as ${role}.`;
    return respondProblem(c, { status: 403, code: "insufficient_role", title: "Not allowed", message, email: user.email, signOut: user.via === "access" });
  });
}
