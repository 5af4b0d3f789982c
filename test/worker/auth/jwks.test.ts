import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { type AuthEnv, auth, createJwksCache, type JwksCacheOptions, verifyAccessJwt } from "../../../worker/auth";
import { fetchCount, jwksUrl, makeKey, nowSec, publish, sign } from "../access-tokens";

// Every fetch counted here is a real HTTP request that reached the test server's /cdn-cgi/access/certs
// (test/otlp-receiver.ts); each test uses a team of its own so the counts are its own.

const TEAM_DOMAIN = "https://jwks-team.cloudflareaccess.com";
const AUD = "jwks-test-aud";
const ORIGIN = "https://console.example.com";

const claims = (email = "viewer@example.com") => ({ iss: TEAM_DOMAIN, aud: [AUD], email, iat: nowSec(), nbf: nowSec(), exp: nowSec() + 600 });
const newTeam = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A console app (auth in access mode) whose keys come from `team` on the test server, with its own cache. */
function appFor(team: string, cache: JwksCacheOptions = {}) {
  const app = new Hono<AuthEnv>();
  app.use(
    auth({
      bindings: {
        ACCESS_TEAM_DOMAIN: TEAM_DOMAIN,
        ACCESS_AUD: AUD,
        ACCESS_JWKS_URL: jwksUrl(team),
        ROLES: '{"viewer":["*@example.com"]}',
        CSRF_SECRET: "jwks-test-csrf-secret-0123456789abcdef",
      },
      jwks: createJwksCache(cache),
    }),
  );
  app.get("/", (c) => c.text(c.var.user.email));
  return app;
}
const request = (app: Hono<AuthEnv>, token: string) => app.request(`${ORIGIN}/`, { headers: { "Cf-Access-Jwt-Assertion": token, Accept: "application/json" } });
const verifyWith = (team: string, cache: ReturnType<typeof createJwksCache>) => (token: string) =>
  verifyAccessJwt(token, { teamDomain: TEAM_DOMAIN, audience: AUD, jwksUrl: jwksUrl(team), jwks: cache });

describe("JWKS fetches are single-flight", () => {
  it("50 concurrent requests with an unknown kid make exactly one JWKS fetch", async () => {
    const team = newTeam("flight");
    const [published, stranger] = await Promise.all([makeKey(), makeKey()]);
    await publish(team, [published]);
    const app = appFor(team, { minRefetchIntervalMs: 0, unknownKidTtlMs: 0 });

    const token = await sign(stranger, claims());
    const answers = await Promise.all(Array.from({ length: 50 }, () => request(app, token)));
    expect(answers.map((r) => r.status)).toEqual(Array(50).fill(401));
    expect(await answers[0]!.json()).toMatchObject({ ok: false, error: { code: "unknown_key" } });
    expect(await fetchCount(team)).toBe(1);
  });

  it("50 concurrent first requests share one fetch and all get in", async () => {
    const team = newTeam("cold");
    const key = await makeKey();
    await publish(team, [key]);
    const app = appFor(team);
    const tokens = await Promise.all(Array.from({ length: 50 }, (_, i) => sign(key, claims(`user${i}@example.com`))));
    const answers = await Promise.all(tokens.map((t) => request(app, t)));
    expect(answers.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(await answers[49]!.text()).toBe("user49@example.com");
    expect(await fetchCount(team)).toBe(1);
  });

  it("50 concurrent unknown kids against a warm cache share one refetch", async () => {
    const team = newTeam("warm");
    const key = await makeKey();
    await publish(team, [key]);
    const app = appFor(team, { minRefetchIntervalMs: 0, unknownKidTtlMs: 0 });
    expect((await request(app, await sign(key, claims()))).status).toBe(200);
    expect(await fetchCount(team)).toBe(1);

    const stranger = await makeKey();
    const tokens = await Promise.all(Array.from({ length: 50 }, (_, i) => sign(stranger, claims(), { kid: `unknown-${i}` })));
    const answers = await Promise.all(tokens.map((t) => request(app, t)));
    expect(answers.map((r) => r.status)).toEqual(Array(50).fill(401));
    expect(await fetchCount(team)).toBe(2);
  });
});

describe("JWKS negative cache", () => {
  it("does not refetch for a kid the last fresh fetch lacked, until that answer expires or a new fetch happens", async () => {
    const team = newTeam("negative");
    const [a, x, y] = await Promise.all([makeKey(), makeKey(), makeKey()]);
    await publish(team, [a]);
    const verify = verifyWith(team, createJwksCache({ minRefetchIntervalMs: 0, unknownKidTtlMs: 60_000 }));

    const xToken = await sign(x, claims());
    expect(await verify(xToken)).toMatchObject({ ok: false, reason: "unknown_key" });
    expect(await fetchCount(team)).toBe(1);
    for (let i = 0; i < 3; i++) expect(await verify(xToken)).toMatchObject({ ok: false, reason: "unknown_key" });
    expect(await fetchCount(team)).toBe(1);

    await publish(team, [a, x]); // x appears, but the cache's answer for x still stands
    expect(await verify(xToken)).toMatchObject({ ok: false, reason: "unknown_key" });
    expect(await fetchCount(team)).toBe(1);

    // Another unknown kid may refetch (the rate limit allows it here); the new set replaces the old answers.
    expect(await verify(await sign(y, claims()))).toMatchObject({ ok: false, reason: "unknown_key" });
    expect(await fetchCount(team)).toBe(2);
    expect(await verify(xToken)).toMatchObject({ ok: true });
    expect(await fetchCount(team)).toBe(2);
  });

  it("asks again for an unknown kid once its negative entry expires", async () => {
    const team = newTeam("expire");
    const [a, z] = await Promise.all([makeKey(), makeKey()]);
    await publish(team, [a]);
    const verify = verifyWith(team, createJwksCache({ minRefetchIntervalMs: 0, unknownKidTtlMs: 50 }));
    const zToken = await sign(z, claims());
    expect(await verify(zToken)).toMatchObject({ ok: false, reason: "unknown_key" });
    await publish(team, [a, z]);
    await sleep(80);
    expect(await verify(zToken)).toMatchObject({ ok: true });
    expect(await fetchCount(team)).toBe(2);
  });

  it("does not retry a failed fetch on every request, and retries after the backoff", async () => {
    const team = newTeam("failing");
    const a = await makeKey();
    await publish(team, [a], 503);
    const token = await sign(a, claims());

    const app = appFor(team, { failureBackoffMs: 60_000 });
    const first = await Promise.all(Array.from({ length: 20 }, () => request(app, token)));
    expect(first.map((r) => r.status)).toEqual(Array(20).fill(503));
    for (let i = 0; i < 5; i++) {
      const res = await request(app, token);
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ ok: false, error: { code: "keys_unavailable" } });
    }
    expect(await fetchCount(team)).toBe(1);

    const quick = verifyWith(team, createJwksCache({ failureBackoffMs: 50 }));
    expect(await quick(token)).toMatchObject({ ok: false, reason: "keys_unavailable" });
    expect(await quick(token)).toMatchObject({ ok: false, reason: "keys_unavailable" });
    expect(await fetchCount(team)).toBe(2);
    await publish(team, [a]); // the endpoint is back
    await sleep(80);
    expect(await quick(token)).toMatchObject({ ok: true });
    expect(await fetchCount(team)).toBe(3);
  });

  it("keeps serving cached keys during the backoff after a failed refresh", async () => {
    const team = newTeam("stale");
    const a = await makeKey();
    await publish(team, [a]);
    const verify = verifyWith(team, createJwksCache({ ttlMs: 0, failureBackoffMs: 60_000 }));
    expect(await verify(await sign(a, claims()))).toMatchObject({ ok: true });
    await publish(team, [a], 503);
    for (let i = 0; i < 3; i++) expect(await verify(await sign(a, claims()))).toMatchObject({ ok: true });
    expect(await fetchCount(team)).toBe(2); // one refresh tried, then the backoff holds
  });
});
