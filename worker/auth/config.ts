import { z } from "zod";
import { isLoopbackHostname } from "./loopback";
import { type RoleRules, RoleRulesSchema } from "./roles";
import type { Role } from "./types";

/** The env settings auth reads (documented in worker/env.ts). All optional: what is missing is reported, never thrown. */
export type AuthBindings = Partial<
  Record<"AUTH_MODE" | "ACCESS_TEAM_DOMAIN" | "ACCESS_AUD" | "ACCESS_JWKS_URL" | "ROLES" | "DEV_USER" | "DEV_ROLE" | "CSRF_SECRET", string>
>;

/** Production mode: every request carries a Cloudflare Access JWT. */
export type AccessAuthConfig = {
  mode: "access";
  /** `https://<team>.cloudflareaccess.com`, no trailing slash; also the expected `iss`. */
  teamDomain: string;
  /** The Access application's AUD tag; the token's `aud` must contain it. */
  audience: string;
  /** Where the team's signing keys are published. */
  jwksUrl: string;
  roles: RoleRules;
  csrfSecret: string;
};

/** Local development: a fixed identity, switched on only by AUTH_MODE=dev. */
export type DevAuthConfig = {
  mode: "dev";
  devUser: string;
  devRole: Role;
  /** Unset: a per-isolate random key is used (see csrf.ts). */
  csrfSecret?: string;
};

export type AuthConfig = AccessAuthConfig | DevAuthConfig;

/** One thing wrong with the settings, naming the setting. */
export type ConfigProblem = { setting: keyof AuthBindings; problem: string };

export type AuthConfigResult = { ok: true; config: AuthConfig } | { ok: false; problems: ConfigProblem[] };

/** Minimum CSRF_SECRET length in access mode (a 32-byte random value, e.g. `openssl rand -hex 32`, is 64). */
export const MIN_CSRF_SECRET_LENGTH = 32;

/** Blank and whitespace-only values count as unset (`wrangler` vars often end up as ""). */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (typeof v === "string" && v.trim() === "" ? undefined : v), schema.optional());
const required = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (typeof v === "string" && v.trim() === "" ? undefined : v), schema);

const missing = { error: (issue: { input: unknown }) => (issue.input === undefined ? "is missing" : "must be a string") };

/** Parses a URL setting, or reports why it is not one. */
function parseUrl(s: string, ctx: z.RefinementCtx, what: string): URL | undefined {
  try {
    return new URL(s);
  } catch {
    ctx.issues.push({ code: "custom", input: s, message: `is not ${what} (got ${JSON.stringify(s)})` });
    return undefined;
  }
}

/**
 * `myteam.cloudflareaccess.com` or `https://myteam.cloudflareaccess.com/` → `https://myteam.cloudflareaccess.com`.
 * https only: the team domain is the trusted issuer and where the signing keys come from.
 */
const teamDomain = z
  .string(missing)
  .trim()
  .transform((s, ctx) => {
    const example = "a team domain like https://<team>.cloudflareaccess.com";
    const url = parseUrl(/^[a-z][a-z0-9+.-]*:\/\//i.test(s) ? s : `https://${s}`, ctx, example);
    if (!url) return z.NEVER;
    if (url.protocol !== "https:") {
      ctx.issues.push({ code: "custom", input: s, message: `must use https:// (got ${JSON.stringify(s)}): tokens and signing keys are only trusted over TLS` });
      return z.NEVER;
    }
    if (url.pathname !== "/" || url.search || url.hash || url.username || url.password) {
      ctx.issues.push({ code: "custom", input: s, message: `is not ${example} (got ${JSON.stringify(s)})` });
      return z.NEVER;
    }
    return url.origin;
  });

/**
 * ACCESS_JWKS_URL: https, or http only to a loopback host. A loopback fetch never leaves the machine (no
 * network to strip TLS on, and a deployed Worker cannot reach one), and the test setup serves its keys there.
 */
const jwksUrl = z
  .string()
  .trim()
  .transform((s, ctx) => {
    const url = parseUrl(s, ctx, "a URL");
    if (!url) return z.NEVER;
    const allowed = url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHostname(url.hostname));
    if (!allowed) {
      const message = `must be an https:// URL (got ${JSON.stringify(s)}; http:// is accepted only for a loopback host such as 127.0.0.1)`;
      ctx.issues.push({ code: "custom", input: s, message });
      return z.NEVER;
    }
    if (url.username || url.password) {
      ctx.issues.push({ code: "custom", input: s, message: "must not carry a user name or password" });
      return z.NEVER;
    }
    return url.href;
  });

const rolesJson = z
  .string(missing)
  .transform((s, ctx) => {
    try {
      return JSON.parse(s) as unknown;
    } catch {
      ctx.issues.push({ code: "custom", input: s, message: 'is not valid JSON (expected e.g. {"operator":["alice@example.com"],"viewer":["*@example.com"]})' });
      return z.NEVER;
    }
  })
  .pipe(RoleRulesSchema);

const ModeSchema = optional(z.enum(["access", "dev"], { error: 'must be "access" or "dev"' })).transform((m) => m ?? "access");

const AccessSchema = z.object({
  ACCESS_TEAM_DOMAIN: required(teamDomain),
  ACCESS_AUD: required(z.string(missing).trim()),
  ACCESS_JWKS_URL: optional(jwksUrl),
  ROLES: required(rolesJson),
  CSRF_SECRET: required(z.string(missing).min(MIN_CSRF_SECRET_LENGTH, `must be at least ${MIN_CSRF_SECRET_LENGTH} characters`)),
});

const DevSchema = z.object({
  DEV_USER: optional(z.string().trim().toLowerCase().regex(/^\S+$/, "must not contain spaces")).transform((u) => u ?? "dev@localhost"),
  DEV_ROLE: optional(z.enum(["viewer", "operator"], { error: 'must be "viewer" or "operator"' })).transform((r) => r ?? "operator"),
  CSRF_SECRET: optional(z.string()),
});

function problemsOf(error: z.ZodError): ConfigProblem[] {
  return error.issues.map((issue) => {
    const [setting, ...rest] = issue.path;
    const where = rest.length ? ` (at ${rest.map(String).join(".")})` : "";
    return { setting: String(setting) as keyof AuthBindings, problem: `${issue.message}${where}` };
  });
}

/**
 * Reads and validates the auth settings. AUTH_MODE defaults to `access`; dev mode is used only when
 * AUTH_MODE is exactly `dev`. Never throws: problems are returned naming the setting.
 */
export function readAuthConfig(bindings: AuthBindings): AuthConfigResult {
  const mode = ModeSchema.safeParse(bindings.AUTH_MODE);
  if (!mode.success) return { ok: false, problems: [{ setting: "AUTH_MODE", problem: mode.error.issues[0]?.message ?? "is invalid" }] };

  if (mode.data === "dev") {
    const dev = DevSchema.safeParse(bindings);
    if (!dev.success) return { ok: false, problems: problemsOf(dev.error) };
    return { ok: true, config: { mode: "dev", devUser: dev.data.DEV_USER, devRole: dev.data.DEV_ROLE, csrfSecret: dev.data.CSRF_SECRET } };
  }

  const access = AccessSchema.safeParse(bindings);
  if (!access.success) return { ok: false, problems: problemsOf(access.error) };
  const { ACCESS_TEAM_DOMAIN: team, ACCESS_AUD, ACCESS_JWKS_URL, ROLES, CSRF_SECRET } = access.data;
  return {
    ok: true,
    config: {
      mode: "access",
      teamDomain: team,
      audience: ACCESS_AUD,
      jwksUrl: ACCESS_JWKS_URL ?? `${team}/cdn-cgi/access/certs`,
      roles: ROLES,
      csrfSecret: CSRF_SECRET,
    },
  };
}

/**
 * One sentence for the operator's log: which settings are missing or wrong, and what to do. It can quote
 * ROLES entries and domains, so it is logged, never shown to visitors (they get `CONFIG_ERROR_MESSAGE`).
 */
export function describeConfigProblems(problems: ConfigProblem[]): string {
  const missingNames = problems.filter((p) => p.problem === "is missing").map((p) => p.setting);
  const other = problems.filter((p) => p.problem !== "is missing").map((p) => `${p.setting} ${p.problem}`);
  const parts = [...(missingNames.length ? [`missing setting${missingNames.length > 1 ? "s" : ""}: ${missingNames.join(", ")}`] : []), ...other];
  return `Sign-in is not configured for this console (${parts.join("; ")}). Set these as Worker vars or secrets; for local development only, AUTH_MODE=dev skips Cloudflare Access.`;
}

/** What every visitor of a misconfigured console reads: nothing about the settings themselves. */
export const CONFIG_ERROR_MESSAGE = "Sign-in is not set up correctly for this console, so nobody can sign in yet. The operator's log has the details.";
