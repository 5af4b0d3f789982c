import { z } from "zod";
import { base64UrlToBytes } from "./base64url";
import { defaultJwksCache, type JwksCache, JwksUnavailableError } from "./jwks";

const HeaderSchema = z.object({
  alg: z.string(),
  kid: z.string().min(1),
  typ: z.string().optional(),
  /** RFC 7515 §4.1.11: a verifier must refuse extensions it does not understand; we understand none. */
  crit: z.unknown().optional(),
});

const GroupSchema = z.union([z.string(), z.looseObject({ id: z.string().optional(), name: z.string().optional(), email: z.string().optional() })]);

/** Claims of a Cloudflare Access application token that the console relies on (others are kept, unvalidated). */
export const AccessClaimsSchema = z.looseObject({
  iss: z.string(),
  aud: z.union([z.string(), z.array(z.string())]),
  exp: z.number(),
  nbf: z.number().optional(),
  iat: z.number().optional(),
  sub: z.string().optional(),
  /** Absent on service-token requests. */
  email: z.string().optional(),
  type: z.string().optional(),
  groups: z.array(GroupSchema).optional(),
});

export type AccessClaims = z.infer<typeof AccessClaimsSchema>;

/** Why a token was refused. Checked in this order: shape, algorithm, key, signature, then claims. */
export type JwtFailure =
  | "malformed"
  | "unsupported_algorithm"
  | "unknown_key"
  | "bad_signature"
  | "wrong_issuer"
  | "wrong_audience"
  | "expired"
  | "not_yet_valid"
  | "keys_unavailable";

export type JwtVerifyResult = { ok: true; claims: AccessClaims } | { ok: false; reason: JwtFailure; detail: string };

export type AccessJwtOptions = {
  /** Expected issuer: `https://<team>.cloudflareaccess.com`. */
  teamDomain: string;
  /** The Access application AUD tag. */
  audience: string;
  /** JWKS URL; defaults to `${teamDomain}/cdn-cgi/access/certs`. */
  jwksUrl?: string;
  /** Tolerance for `exp` and `nbf`, seconds. Default 30. */
  clockSkewSec?: number;
  /** Current time in ms (tests). Default `Date.now()`. */
  now?: number;
  jwks?: JwksCache;
};

/** Longest token we look at; Access tokens are a few KB even with groups. */
const MAX_TOKEN_LENGTH = 16 * 1024;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

function decodeJson(part: string): unknown {
  const bytes = base64UrlToBytes(part);
  if (!bytes) return undefined;
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch {
    return undefined;
  }
}

const fail = (reason: JwtFailure, detail: string): JwtVerifyResult => ({ ok: false, reason, detail });
const trimSlash = (s: string) => s.replace(/\/+$/, "");

/**
 * Verifies a Cloudflare Access JWT: RS256 signature against the team's published keys (WebCrypto),
 * then issuer, audience, `exp` and `nbf` (with clock skew). The signature is checked before any claim,
 * so an unsigned or forged token never gets a claim-specific answer.
 */
export async function verifyAccessJwt(token: string, options: AccessJwtOptions): Promise<JwtVerifyResult> {
  if (token.length > MAX_TOKEN_LENGTH) return fail("malformed", "token is too long");
  const parts = token.split(".");
  if (parts.length !== 3) return fail("malformed", "a JWT has three dot-separated parts");
  const [rawHeader, rawPayload, rawSignature] = parts as [string, string, string];

  const header = HeaderSchema.safeParse(decodeJson(rawHeader));
  if (!header.success) return fail("malformed", "the JWT header is not valid");
  if (header.data.alg !== "RS256") return fail("unsupported_algorithm", `alg ${header.data.alg} is not RS256`);
  if (header.data.crit !== undefined) return fail("malformed", "the JWT header lists critical extensions (crit), which this console does not support");
  const signature = base64UrlToBytes(rawSignature);
  if (!signature || signature.length === 0) return fail("malformed", "the JWT signature is not base64url");

  const jwksUrl = options.jwksUrl ?? `${trimSlash(options.teamDomain)}/cdn-cgi/access/certs`;
  let key: CryptoKey | undefined;
  try {
    key = await (options.jwks ?? defaultJwksCache).getKey(jwksUrl, header.data.kid);
  } catch (e) {
    if (e instanceof JwksUnavailableError) return fail("keys_unavailable", e.message);
    throw e;
  }
  if (!key) return fail("unknown_key", `no key with kid ${header.data.kid} at ${jwksUrl}`);

  const signed = encoder.encode(`${rawHeader}.${rawPayload}`);
  if (!(await crypto.subtle.verify("RSASSA-PKCS1-v1_5", key, signature, signed))) return fail("bad_signature", "signature does not verify");

  const claims = AccessClaimsSchema.safeParse(decodeJson(rawPayload));
  if (!claims.success) return fail("malformed", "the JWT payload lacks iss, aud or exp");
  const { iss, aud, exp, nbf } = claims.data;

  if (trimSlash(iss) !== trimSlash(options.teamDomain)) return fail("wrong_issuer", `issued by ${iss}`);
  const audiences = Array.isArray(aud) ? aud : [aud];
  if (!audiences.includes(options.audience)) return fail("wrong_audience", "aud does not contain this application's AUD tag");

  const nowSec = (options.now ?? Date.now()) / 1000;
  const skew = options.clockSkewSec ?? 30;
  if (nowSec > exp + skew) return fail("expired", `expired at ${new Date(exp * 1000).toISOString()}`);
  if (nbf !== undefined && nowSec < nbf - skew) return fail("not_yet_valid", `not valid before ${new Date(nbf * 1000).toISOString()}`);

  return { ok: true, claims: claims.data };
}

/** Group names and ids from an Access `groups` claim, for matching `group:` entries in ROLES. */
export function groupsOf(claims: AccessClaims): string[] {
  return (claims.groups ?? []).flatMap((g) => (typeof g === "string" ? [g] : [g.id, g.name, g.email].filter((v): v is string => !!v)));
}
