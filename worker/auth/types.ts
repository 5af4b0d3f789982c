import type { Env } from "../env";

/** The console's roles. `operator` can act (force idle, trigger alarms); it implies `viewer`. */
export type Role = "viewer" | "operator";

/** Who is making the request, as established by `auth()`. */
export type AuthUser = {
  /** Lower-cased email from the Access token (or DEV_USER in dev mode). */
  email: string;
  role: Role;
  /** How the identity was established: a verified Cloudflare Access JWT, or the explicit local dev mode. */
  via: "access" | "dev";
};

/** What `auth()` puts on the Hono context (`c.var`). */
export type AuthVariables = {
  user: AuthUser;
  /** True in AUTH_MODE=dev: the layout must show `DEV_AUTH_BANNER` on every page. */
  devAuth: boolean;
  /** Synchronizer token for this user and time window; read it with `csrfToken(c)`. */
  csrfToken: string;
  /** Non-extractable HMAC key the `csrf()` middleware checks tokens with. Internal to worker/auth. */
  csrfKey: CryptoKey;
};

/** Hono environment of an app (or sub-app) that mounts `auth()`. */
export type AuthEnv = { Bindings: Env; Variables: AuthVariables };

/** Text of the banner the layout shows when `c.var.devAuth` is set. */
export const DEV_AUTH_BANNER = "Local dev auth — not for production";
