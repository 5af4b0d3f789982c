import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../scripts/wrangler-config.ts";
import { type DevServer, startDev, stop } from "./wrangler-dev";

/**
 * The CLI prints every refusal readably: against the real console in Access mode (a real JWKS served here, real
 * RS256 tokens: expired, missing, a viewer's, an operator's on an unknown agent), and against answers that are not
 * the console's (a sign-in redirect, a proxy's HTML 502). The sentence is the behaviour under test here.
 */

const PORT = 8881;
const AUD = "cli-refusals-aud";
const RS256 = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } as const;
const b64url = (bytes: ArrayBuffer | Uint8Array | string) => Buffer.from(typeof bytes === "string" ? bytes : new Uint8Array(bytes)).toString("base64url");

let server: DevServer;
let team: Server;
let teamDomain: string;
let keys: CryptoKeyPair;
const KID = "cli-refusals-key";

/** An Access token for `email`, valid or `expiredSecondsAgo` expired. */
async function token(email: string, expiredSecondsAgo = 0): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const exp = expiredSecondsAgo ? now - expiredSecondsAgo : now + 3600;
  const input = `${b64url(JSON.stringify({ alg: "RS256", kid: KID, typ: "JWT" }))}.${b64url(JSON.stringify({ iss: teamDomain, aud: [AUD], email, sub: email, iat: exp - 3600, exp }))}`;
  return `${input}.${b64url(await crypto.subtle.sign(RS256.name, keys.privateKey, new TextEncoder().encode(input)))}`;
}

/** Runs scripts/cli.mjs under this Node with `env`; resolves with its exit code and output. */
function cli(args: string[], env: Record<string, string> = {}, url = server.base): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const clean = { ...process.env, ...env };
    if (!env.CF_ACCESS_TOKEN) delete clean.CF_ACCESS_TOKEN;
    const p = spawn(process.execPath, ["scripts/cli.mjs", ...args, "--url", url], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"], env: clean });
    let out = "";
    p.stdout.on("data", (d) => (out += String(d)));
    p.stderr.on("data", (d) => (out += String(d)));
    p.on("close", (code) => resolve({ code, out: out.trim() }));
  });
}

/** A loopback HTTP server answering every request with `answer`. */
async function serve(answer: (res: import("node:http").ServerResponse) => void): Promise<Server> {
  const s = createServer((_req, res) => answer(res));
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return s;
}
const urlOf = (s: Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

beforeAll(async () => {
  keys = (await crypto.subtle.generateKey({ ...RS256, modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]) }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  const jwk = (await crypto.subtle.exportKey("jwk", keys.publicKey)) as JsonWebKey;
  const jwks = JSON.stringify({ keys: [{ kty: "RSA", n: jwk.n, e: jwk.e, alg: "RS256", use: "sig", kid: KID }] });
  // The team's keys are served here, on loopback (the one place ACCESS_JWKS_URL may be plain http).
  team = await serve((res) => res.writeHead(200, { "Content-Type": "application/json" }).end(jwks));
  teamDomain = "https://cli-refusals.example.com";
  server = await startDev({
    port: PORT,
    vars: {
      AUTH_MODE: "access",
      ACCESS_TEAM_DOMAIN: teamDomain,
      ACCESS_JWKS_URL: `${urlOf(team)}/cdn-cgi/access/certs`,
      ACCESS_AUD: AUD,
      ROLES: JSON.stringify({ operator: ["op@example.com"], viewer: ["viewer@example.com"] }),
      CSRF_SECRET: "cli-refusals-csrf-secret-0123456789abcdef",
    },
  });
}, 180_000);

afterAll(async () => {
  if (server) await stop(server);
  team?.close();
});

describe("the CLI against the console in Access mode", () => {
  it("an expired token: the code and the sentence, exit 1", async () => {
    const r = await cli(["agents"], { CF_ACCESS_TOKEN: await token("op@example.com", 600) });
    expect(r).toEqual({ code: 1, out: "✖ /api/agents refused: expired: Your sign-in has expired. Reload the page to sign in again." });
  });

  it("no token at all", async () => {
    const r = await cli(["runs", "DemoSessionAgent", "x"]);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/^✖ \/api\/agents\/DemoSessionAgent\/x refused: missing: You are not signed in: /);
  });

  it("a viewer's action, refused by the audited admin client", async () => {
    const r = await cli(["force-idle", "DemoSessionAgent", "nobody", "--reason", "try"], { CF_ACCESS_TOKEN: await token("viewer@example.com") });
    expect(r).toEqual({ code: 1, out: "✖ force-idle refused: not_permitted: refused: viewer@example.com has the viewer role; this action needs operator" });
  });

  it("an operator's action on an agent the console does not know", async () => {
    const r = await cli(["trigger-alarm", "DemoSessionAgent", "nobody-here", "--reason", "try"], { CF_ACCESS_TOKEN: await token("op@example.com") });
    expect(r).toEqual({ code: 1, out: '✖ trigger-alarm refused: not_found: no agent DemoSessionAgent "nobody-here" in the registry' });
  });

  it("a signed-in operator gets the answer", async () => {
    const r = await cli(["agents"], { CF_ACCESS_TOKEN: await token("op@example.com") });
    expect(r.code).toBe(0);
  });
});

describe("the CLI against answers that are not the console's", () => {
  it("a redirect to a sign-in page", async () => {
    const s = await serve((res) => res.writeHead(302, { Location: "https://team.example.com/cdn-cgi/access/login/console.example.com" }).end());
    const r = await cli(["agents"], {}, urlOf(s));
    s.close();
    expect(r).toEqual({
      code: 1,
      out: "✖ HTTP 302 from /api/agents: a redirect to https://team.example.com/cdn-cgi/access/login/console.example.com, not the console's answer; is CF_ACCESS_TOKEN set to a current Access token for this console?",
    });
  });

  it("a sign-in page served with 200", async () => {
    const s = await serve((res) =>
      res
        .writeHead(200, { "Content-Type": "text/html" })
        .end("<!doctype html><html><head><title>Sign in ・ Cloudflare Access</title></head><body>…</body></html>"),
    );
    const r = await cli(["agents"], {}, urlOf(s));
    s.close();
    expect(r).toEqual({ code: 1, out: '✖ HTTP 200 from /api/agents: an HTML page titled "Sign in ・ Cloudflare Access", not the console\'s JSON' });
  });

  it("a proxy's 502", async () => {
    const s = await serve((res) =>
      res.writeHead(502, { "Content-Type": "text/html" }).end("<html><head><title>502 Bad Gateway</title></head><body><h1>502</h1></body></html>"),
    );
    const r = await cli(["runs", "A", "b"], {}, urlOf(s));
    s.close();
    expect(r).toEqual({
      code: 1,
      out: '✖ HTTP 502 from /api/agents/A/b: an HTML page titled "502 Bad Gateway", not the console\'s JSON; the console or a proxy in front of it failed',
    });
  });

  it("a refusal body that is not the console's shape", async () => {
    const s = await serve((res) => res.writeHead(429, { "Content-Type": "application/json" }).end('{"message":"slow down"}'));
    const r = await cli(["agents"], {}, urlOf(s));
    s.close();
    expect(r).toEqual({ code: 1, out: '✖ /api/agents refused: HTTP 429, not a refusal the console knows: {"message":"slow down"}' });
  });
});
