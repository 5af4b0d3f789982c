/**
 * Console authentication and authorization: Cloudflare Access JWT verification, viewer/operator roles,
 * an explicit local dev mode (loopback only), CSRF protection, and the APM_TRACE_URL check. Mount as
 * `app.use(auth()); app.use(csrf()); app.post("/actions/*", requireRole("operator"), …)`.
 */

export {
  type AuthBindings,
  type AuthConfig,
  type AuthConfigResult,
  CONFIG_ERROR_MESSAGE,
  type ConfigProblem,
  describeConfigProblems,
  readAuthConfig,
} from "./config";
export { CSRF_FIELD, CSRF_HEADER, CSRF_WINDOW_MS, csrf, csrfHxHeaders, csrfKey, csrfToken, issueCsrfToken, verifyCsrfToken } from "./csrf";
export { type Email, normalizeIdentifier, parseEmail } from "./identity";
export { createJwksCache, defaultJwksCache, type JwksCache, type JwksCacheOptions, JwksUnavailableError } from "./jwks";
export { type AccessClaims, type AccessJwtOptions, groupsOf, type JwtFailure, type JwtVerifyResult, verifyAccessJwt } from "./jwt";
export { DEV_MODE_LOCAL_ONLY_MESSAGE, notLocalReason } from "./local-only";
export { isLoopbackHostname } from "./loopback";
export { type AuthOptions, auth, PUBLIC_PATHS, requireRole } from "./middleware";
export { type AuthProblem, respondProblem } from "./problem";
export { hasRole, matchesRolePattern, parseRolePattern, type RolePattern, type RoleRules, roleFor } from "./roles";
export { ACCESS_JWT_COOKIE, ACCESS_JWT_HEADER, readAccessToken } from "./token";
export { readTraceLinkSetting, type TraceLinkSetting } from "./trace-link";
export { type AuthEnv, type AuthUser, type AuthVariables, DEV_AUTH_BANNER, type Role } from "./types";
