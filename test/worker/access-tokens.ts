import { env } from "cloudflare:workers";
import { expect } from "vitest";

/**
 * Real Cloudflare Access tokens for workerd tests: RSA keys made here, their public halves served as a
 * team's JWKS by the Node test server (test/otlp-receiver.ts, `POST /__jwks?team=…`), and RS256
 * signatures made here with WebCrypto. Nothing is mocked: the Worker fetches and verifies as in production.
 */

export type TestKey = { kid: string; privateKey: CryptoKey; jwk: JsonWebKey & { kid: string } };

const enc = new TextEncoder();
const RS256 = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } as const;

export const b64url = (bytes: ArrayBuffer | Uint8Array) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
export const b64urlJson = (v: unknown) => b64url(enc.encode(JSON.stringify(v)));
export const nowSec = () => Math.floor(Date.now() / 1000);

const publicJwk = (kid: string, pub: JsonWebKey): TestKey["jwk"] => ({ kty: "RSA", n: pub.n, e: pub.e, alg: "RS256", use: "sig", kid });

/** A fresh RSA signing key (2048 bits, RS256). */
export async function makeKey(kid: string = crypto.randomUUID()): Promise<TestKey> {
  const pair = (await crypto.subtle.generateKey({ ...RS256, modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]) }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  return { kid, privateKey: pair.privateKey, jwk: publicJwk(kid, (await crypto.subtle.exportKey("jwk", pair.publicKey)) as JsonWebKey) };
}

/** Serves `keys` as the JWKS of `team` from the Node test server, the way Access serves its certs (replacing what it served before). */
export async function publish(team: string, keys: TestKey[], status = 200): Promise<void> {
  const res = await fetch(`${env.OTLP_CONTROL}/__jwks?team=${team}&status=${status}`, {
    method: "POST",
    body: JSON.stringify({ keys: keys.map((k) => k.jwk), public_cert: { kid: keys[0]?.kid, cert: "-----BEGIN CERTIFICATE-----" } }),
  });
  expect(res.status).toBe(200);
}

/** How often the Worker (or a verifier) fetched `team`'s certs URL. */
export const fetchCount = async (team: string) => ((await (await fetch(`${env.OTLP_CONTROL}/__jwks?team=${team}`)).json()) as { fetches: number }).fetches;
/** The certs URL of `team` on the test server. */
export const jwksUrl = (team: string) => `${env.OTLP_CONTROL}/cdn-cgi/access/certs?team=${team}`;

/** Signs `claims` as an RS256 JWT with `key`; `header` overrides header fields (e.g. alg, kid). */
export async function sign(key: TestKey, claims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  const signingInput = `${b64urlJson({ alg: "RS256", kid: key.kid, typ: "JWT", ...header })}.${b64urlJson(claims)}`;
  const sig = await crypto.subtle.sign("RSASSA-PKCS1-v1_5", key.privateKey, enc.encode(signingInput));
  return `${signingInput}.${b64url(sig)}`;
}

// ----- the test Worker's own team (`env`) -----
//
// Every workerd test file runs in its own isolate, in parallel, and the test server keeps ONE key set per
// team: if each file published a fresh key under `env`, a later file would replace an earlier one's key and
// that file's tokens would stop verifying. So the `env` team has one fixed, test-only key pair, and
// publishing it is idempotent. It signs nothing but test tokens for ACCESS_TEAM_DOMAIN / ACCESS_AUD below.

/** Test-only private key of the `env` team (generated for this suite; never used anywhere else). */
const ENV_TEAM_PRIVATE_JWK: JsonWebKey = {
  kty: "RSA",
  n: "u2Afk1foTiINNBQNPMEVdbYeyxzGjM3DCjjvsgjpX1O2rmMWv2eFTidFupMbMFRt10k0osoWrWDgdJd--CZnZbHkj6wt2nk2lxifzjIlhhlJscoXawAk9Eb1graPmQDuyMYBNsOHQgpJ-ilnqzDqwZYH1iYMNap6crXBUqnqgIy2cYwc5gcdr_jPhxObE-69P1kSDUSaZihCFN3jQAVPoh4XJ0lS-bVhXu0h7f3QHumiJXDpDLXkLvPkPR21yZv65yFFNk2q2AlIfPmtvcRRGmKMpERqPUnIlV2nQI7rjO0z5jsHyVF7vw4RkAgjrG-Xh98BwW_k9GvO0n8pSESzPQ",
  e: "AQAB",
  d: "CZ0YcaRggGXB3KqstTHI6pWyBcTPsRi7iZI7Rhyr8J6ocFEYMTDcB5L_Ql_a1MN4MUQJxdJtkG64hXLialP6GR8j9XUlkyCF-wGh7V_oSfWRMOSICA7lVn0vionYW0bPeZCjLk6g6XQCsKmgLonfeZg7hbLFDJnXF3yY0ydxpy-6kD7h1euFYFigmfpJWkW836I7dIEpgoqz-PleKsTWkBI6Y_zuSs0zGpCF_n4Y225AN5SrgUC7L4PwKk9WvqwY1c8bxIQgk1JvIYecpomUhzYurCbYb8FLYFq6zGk_OUwqjSWkkWSuMV1owrHGGHWEZN_H-sZGptTF0JmqOPzUhw",
  p: "3voxl2JtLBS9UapukMjUX-GsOdX4Hz8Gs7uHQpQSuVkTCGvQw_3BsAp_-QuW3SDevrWUvLmoo-CVAQqhJ876cSI8932E9BMu782fg6goCWppiY4eSkZ-qTX_grcQyGvRx8SAf4KrpHccaypyf7-Ag1ouo78WdtXBe0ScxnPlohs",
  q: "1yAlfPbNgHtLQV2V-od4YP33hm4k7a5AnhhezR-YMOHImHrijbXVUo-mGnSvtN1y874O3ystf6F2GDSeM5t5y7VJ5frgTvbfQrkd7cZp6ZoRdbf4UtoSyuQF2pm0rUVRLzNqO5tAbJN1_8UhP2lAeiFECjg7jaGLjqTNWTmgFYc",
  dp: "sEYWolj7eZfDuyYDVo6N5mbf4rEXAIyw3bHo0meBDeovM78YQXkAgA0s8lOJJrNvpFCkjzYu7a8D3NjsYi4sqveoPveJ_fKUbpud-VUcoaTwXgBuTcXBKEA6CLp0mB00sLrV4vgIfXJ0kvvxnLBmBnFq4aSVO8jstmidj_3bkfU",
  dq: "pjkJnnBZQ7CA6qX0cBtjEZbLPs02rYyaE06DWf3Sq9qaE-_HxHW-ukeSshh9d8QwwVOWzCvhwR-yT2vA3eGBj7ypuBFMZtdslXLSRFqulbjdStd3AhXMtYbRWyKvL79CxrT0ndANTJf4ckQQt52NG5E-sKLYqUwsuHBw10OmhVs",
  qi: "C7Mw5ayT-5EBNPKjBqBBnxBIHXK0bcJtqcXO6CyDs-2usKhk1N2QavFG9zv6ZA3J2zuVXajIlSk-uDY7xOlUzqQGx3SIROLKTyYe6gi_MzftMDnOrSgwkjAU-M5wbhYJ8bFyQZmENQm-YYAYLTr0FeJIVNAgmIEsCAe38NxXEos",
};
const ENV_TEAM_KID = "env-team-test-key-1";

let envKeyPromise: Promise<TestKey> | undefined;

/** The `env` team's signing key (see above). */
export function envTeamKey(): Promise<TestKey> {
  envKeyPromise ??= crypto.subtle.importKey("jwk", { ...ENV_TEAM_PRIVATE_JWK, alg: "RS256", ext: true }, RS256, false, ["sign"]).then((privateKey) => ({
    kid: ENV_TEAM_KID,
    privateKey,
    jwk: publicJwk(ENV_TEAM_KID, ENV_TEAM_PRIVATE_JWK),
  }));
  return envKeyPromise;
}

/** Publishes the `env` team's key set, the one the test Worker's ACCESS_JWKS_URL points at. Call once per file (beforeAll). */
export async function publishEnvTeamKeys(): Promise<TestKey> {
  const key = await envTeamKey();
  await publish("env", [key]);
  return key;
}

/** Claims of a valid Access application token for the test Worker (issuer ACCESS_TEAM_DOMAIN, audience ACCESS_AUD), valid for an hour. */
export function envClaims(email: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    iss: env.ACCESS_TEAM_DOMAIN,
    aud: [env.ACCESS_AUD],
    email,
    sub: crypto.randomUUID(),
    type: "app",
    iat: nowSec(),
    nbf: nowSec(),
    exp: nowSec() + 3600,
    identity_nonce: "n",
    country: "NL",
    ...extra,
  };
}

/** A token the test Worker accepts for `email` (its role comes from ROLES). */
export async function envToken(email: string, extra: Record<string, unknown> = {}): Promise<string> {
  return sign(await envTeamKey(), envClaims(email, extra));
}
