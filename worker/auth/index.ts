/**
 * Console authentication and authorization: Cloudflare Access JWT verification, viewer/operator roles,
 * an explicit local dev mode (loopback only), CSRF protection, and the APM_TRACE_URL check. Mount as
 * `app.use(auth()); app.use(csrf()); app.post("/actions/*", requireRole("operator"), …)`.
 */
export { auth, requireRole, PUBLIC_PATHS, type AuthOptions } from "./middleware";
export { csrf, csrfToken, csrfHxHeaders, csrfKey, issueCsrfToken, verifyCsrfToken, CSRF_HEADER, CSRF_FIELD, CSRF_WINDOW_MS } from "./csrf";
export { readAuthConfig, describeConfigProblems, CONFIG_ERROR_MESSAGE, type AuthBindings, type AuthConfig, type AuthConfigResult, type ConfigProblem } from "./config";
export { verifyAccessJwt, groupsOf, type AccessClaims, type AccessJwtOptions, type JwtFailure, type JwtVerifyResult } from "./jwt";
export { createJwksCache, defaultJwksCache, JwksUnavailableError, type JwksCache, type JwksCacheOptions } from "./jwks";
export { roleFor, hasRole, matchesRolePattern, parseRolePattern, type RoleRules, type RolePattern } from "./roles";
export { parseEmail, normalizeIdentifier, type Email } from "./identity";
export { notLocalReason, DEV_MODE_LOCAL_ONLY_MESSAGE } from "./local-only";
export { isLoopbackHostname } from "./loopback";
export { readTraceLinkSetting, type TraceLinkSetting } from "./trace-link";
export { readAccessToken, ACCESS_JWT_HEADER, ACCESS_JWT_COOKIE } from "./token";
export { respondProblem, type AuthProblem } from "./problem";
export { DEV_AUTH_BANNER, type AuthEnv, type AuthUser, type AuthVariables, type Role } from "./types";
