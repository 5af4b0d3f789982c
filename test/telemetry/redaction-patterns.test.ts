import { capField, maskJson, maskSecrets, toPreview } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { patient } from "../patience";

/** One credential shape: the text it appears in, the secret part of it, and the marker that replaces it. */
type Case = { label: string; text: string; secret: string; marker: string };

const b64 = (s: string) => btoa(s);
const pemBody = "MIIEpAIBAAKCAQEAq7Bx9kQ2fJ3mZ8cV1nR4tYwL0sD6hG5jK8pXoE2uI9aN3bM7\nvC1xZ4qW6eR8tY0uI2oP5aS7dF9gH1jK3lZ5xC7vB9nM2qW4eR6tY8uI0oP3aS5";
const jwtHeader = b64(JSON.stringify({ alg: "HS256", typ: "JWT" })).replace(/=+$/, "");
const jwtNone = b64(JSON.stringify({ alg: "none", typ: "JWT" })).replace(/=+$/, "");
const jwtPayload = b64(JSON.stringify({ sub: "user-8812", role: "admin", exp: 1900000000 })).replace(/=+$/, "");

const CASES: Case[] = [
  {
    label: "Basic auth header",
    text: `Authorization: Basic ${b64("ops-admin:Tr0ub4dor&3")}`,
    secret: b64("ops-admin:Tr0ub4dor&3"),
    marker: "Basic [masked: credentials]",
  },
  {
    label: "Basic credentials outside a header",
    text: `curl -H 'Auth: Basic ${b64("svc:Zq8Kp2Lm")}' https://api`,
    secret: b64("svc:Zq8Kp2Lm"),
    marker: "Basic [masked: credentials]",
  },
  { label: "short Bearer token", text: "calling with Bearer q9Zk2 now", secret: "q9Zk2", marker: "Bearer [masked: token]" },
  {
    label: "long Bearer token",
    text: "Authorization: Bearer 7fQ2xLk9PzR4mW8vN3bC6tY1uJ5hG0dS",
    secret: "7fQ2xLk9PzR4mW8vN3bC6tY1uJ5hG0dS",
    marker: "Bearer [masked: token]",
  },
  { label: "AWS access key id (AKIA)", text: "aws_access_key_id=AKIAZ7Q3KX5LMN2PQRST", secret: "AKIAZ7Q3KX5LMN2PQRST", marker: "[masked: aws access key id]" },
  { label: "AWS temporary key id (ASIA)", text: "key ASIAQ4W7E2R9T6Y3U8I1 expires", secret: "ASIAQ4W7E2R9T6Y3U8I1", marker: "[masked: aws access key id]" },
  {
    label: "AWS secret access key pair",
    text: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq9w8e7d6c",
    secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq9w8e7d6c",
    marker: "aws_secret_access_key = [masked: aws secret access key]",
  },
  {
    label: "AWS secret in JSON",
    text: '{"AWS_SECRET_ACCESS_KEY": "Zx9Lk2Mn8Bv4Cx7Qw1Er5Ty3Ui6Op0As2Df4Gh8J"}',
    secret: "Zx9Lk2Mn8Bv4Cx7Qw1Er5Ty3Ui6Op0As2Df4Gh8J",
    marker: '"AWS_SECRET_ACCESS_KEY": "[masked: aws secret access key]"',
  },
  {
    label: "GitHub personal token",
    text: "GITHUB=ghp_R4nd0mT0k3nV4lu3F0rT3st1ngXyZ12345",
    secret: "R4nd0mT0k3nV4lu3F0rT3st1ngXyZ12345",
    marker: "[masked: github token]",
  },
  {
    label: "GitHub OAuth token",
    text: "token gho_16C7e42F292c6912E7710c838347Ae178B4a",
    secret: "16C7e42F292c6912E7710c838347Ae178B4a",
    marker: "[masked: github token]",
  },
  {
    label: "GitHub app token",
    text: "git clone with ghs_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78",
    secret: "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78",
    marker: "[masked: github token]",
  },
  {
    label: "GitHub fine-grained token",
    text: "pat github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789abcdefGHIJ",
    secret: "11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789abcdefGHIJ",
    marker: "[masked: github token]",
  },
  {
    label: "Slack bot token",
    text: "SLACK=xoxb-2401930291-5839201928374-Qw8Er7Ty6Ui5Op4As3Df2Gh1",
    secret: "2401930291-5839201928374-Qw8Er7Ty6Ui5Op4As3Df2Gh1",
    marker: "[masked: slack token]",
  },
  { label: "Slack user token", text: "user xoxp-1234-5678-9012-Zm9vYmFyYmF6cXV4", secret: "1234-5678-9012-Zm9vYmFyYmF6cXV4", marker: "[masked: slack token]" },
  {
    label: "Google API key",
    text: "maps?key=AIzaSyD4k8Lm2Nq7Rs9Tv3Wx5Yz1Ab6Cd0Ef8Gh",
    secret: "SyD4k8Lm2Nq7Rs9Tv3Wx5Yz1Ab6Cd0Ef8Gh",
    marker: "[masked: google api key]",
  },
  {
    label: "PEM private key",
    text: `key:\n-----BEGIN RSA PRIVATE KEY-----\n${pemBody}\n-----END RSA PRIVATE KEY-----\nafter`,
    secret: pemBody,
    marker: "key:\n[masked: private key]\nafter",
  },
  { label: "PEM private key without its END line", text: `-----BEGIN OPENSSH PRIVATE KEY-----\n${pemBody}`, secret: pemBody, marker: "[masked: private key]" },
  {
    label: "credentials in a URL",
    text: "DATABASE_URL=postgres://admin:s3cr3tP4ssw0rd@db.internal:5432/app",
    secret: "s3cr3tP4ssw0rd",
    marker: "postgres://[masked: url credentials]@db.internal:5432/app",
  },
  { label: "password= pair", text: "login?user=bob&password=hunter2hunter2&next=/", secret: "hunter2hunter2", marker: "password=[masked: password]&next=/" },
  { label: "passwd: pair", text: "passwd: Correct-Horse-Battery", secret: "Correct-Horse-Battery", marker: "passwd: [masked: password]" },
  { label: "secret= pair", text: "client secret=Sh4r3dS3cr3tV4lue", secret: "Sh4r3dS3cr3tV4lue", marker: "secret=[masked: secret]" },
  { label: "token= pair", text: "reset?token=Xb7Kq2Lp9Mz4", secret: "Xb7Kq2Lp9Mz4", marker: "token=[masked: token]" },
  { label: "api_key= pair", text: "api_key=Ak47Pq91Zx33Lm", secret: "Ak47Pq91Zx33Lm", marker: "api_key=[masked: api key]" },
  { label: "JSON password", text: '{"user":"bob","password": "p@ss w0rd \\" quoted"}', secret: "p@ss w0rd", marker: '"password": "[masked: password]"}' },
  {
    label: "password inside JSON inside a string",
    text: '"{\\"password\\":\\"Inn3rS3cr3t\\"}"',
    secret: "Inn3rS3cr3t",
    marker: '\\"password\\":\\"[masked: password]\\"',
  },
  {
    label: "signed JWT",
    text: `id_token ${jwtHeader}.${jwtPayload}.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk`,
    secret: `${jwtHeader}.${jwtPayload}`,
    marker: "[masked: jwt]",
  },
  {
    label: "unsigned JWT (alg none)",
    text: `forged ${jwtNone}.${jwtPayload}. accepted`,
    secret: `${jwtNone}.${jwtPayload}`,
    marker: "[masked: unsigned jwt] accepted",
  },
  { label: "provider API key", text: "OPENAI=sk-proj-Qm3Lk8Zp2Xv7Nc4Bw9Ty1Ur6", secret: "Qm3Lk8Zp2Xv7Nc4Bw9Ty1Ur6", marker: "[masked: api key]" },
  { label: "long hex secret", text: `signing key ${"9f".repeat(32)} loaded`, secret: "9f".repeat(32), marker: "[masked: hex secret]" },
];

/** Every piece of `secret` long enough to identify it (the whole secret when it is short). */
function pieces(secret: string): string[] {
  const n = Math.min(6, secret.length);
  const out = new Set<string>();
  for (let i = 0; i + n <= secret.length; i++) out.add(secret.slice(i, i + n));
  return [...out];
}

function expectNothingOf(secret: string, text: string, where: string) {
  for (const p of pieces(secret)) expect(text.includes(p), `${where}: "${p}" of the secret survived in ${JSON.stringify(text)}`).toBe(false);
}

describe("credential masking", () => {
  it.each(CASES)("masks $label with a marker that names it", ({ text, secret, marker }) => {
    const masked = maskSecrets(text);
    expect(masked).toContain(marker);
    expectNothingOf(secret, masked, "masked text");
    // Masking again changes nothing: console pages re-mask what telemetry already masked.
    expect(maskSecrets(masked)).toBe(masked);
  });

  it.each(CASES)("leaves nothing of $label when a preview is cut anywhere inside it", ({ text, secret }) => {
    const start = text.indexOf(secret.slice(0, 6));
    expect(start).toBeGreaterThanOrEqual(0);
    // Shift the text so the preview's cut (240 chars) falls on every character of the secret in turn.
    for (let at = Math.max(1, start - 2); at <= start + secret.length + 2; at++) {
      const filler = "lorem ipsum ".repeat(30).slice(0, 240 - at);
      const preview = toPreview(filler + text, 240);
      expect(preview.preview.length).toBeLessThanOrEqual(240);
      expectNothingOf(secret, preview.preview, `preview cut at ${at}`);
      expectNothingOf(secret, capField(filler + text, 240), `field cut at ${at}`);
    }
  });

  it("keeps the original size and says when a preview was cut", () => {
    const text = `${"a ".repeat(200)}token=Xb7Kq2Lp9Mz4`;
    const p = toPreview(text, 100);
    expect(p).toEqual({ preview: "a ".repeat(50), bytes: text.length, truncated: true });
    expect(toPreview("short token=abcdef")).toEqual({ preview: "short token=[masked: token]", bytes: 18, truncated: false });
    expect(capField(`${"b".repeat(30)} password=hunter2hunter2`, 20)).toBe(`${"b".repeat(20)}… [truncated 38 chars]`);
  });

  it("never cuts a preview through a marker", () => {
    const p = toPreview(`${"x".repeat(230)} ghp_R4nd0mT0k3nV4lu3F0rT3st1ngXyZ12345 tail`, 240);
    expect(p.preview).toBe(`${"x".repeat(230)} `);
    expect(p.truncated).toBe(true);
  });

  it("leaves ordinary text alone", () => {
    const ordinary = [
      "max_tokens=1000 and tokens: 5",
      "Basic usage and Basic idea",
      "task-abcdefghijklmnopqrstuvwxyz0123",
      "commit 3f9a2b1 fixed the secretary: Jane bug",
      "https://example.com/path?page=2#top and ssh://git@github.com/org/repo",
      '{"token":null,"passwordHint":"first pet","usage":{"inputTokens":12}}',
    ];
    for (const s of ordinary) expect(maskSecrets(s)).toBe(s);
  });

  it("keeps JSON valid when masking JSON text", () => {
    const json = JSON.stringify({ password: "hunter2", n: { api_key: 12345, token: null }, list: ["Bearer abc123", "ok"] });
    const masked = maskSecrets(json);
    expect(JSON.parse(masked)).toEqual({
      password: "[masked: password]",
      n: { api_key: "[masked: api key]", token: null },
      list: ["Bearer [masked: token]", "ok"],
    });
  });

  it("masks a parsed snapshot by key and by value, without touching counts", () => {
    const snapshot = {
      step: 3,
      db: { password: "hunter2", dbPassword: 424242, apiKey: "abc", maxToken: 512, authorization: "Token Zx81" },
      notes: ["deploy with ghp_R4nd0mT0k3nV4lu3F0rT3st1ngXyZ12345", { url: "https://u:p4ss@h.example/x" }],
    };
    const copy = structuredClone(snapshot);
    expect(maskJson(snapshot)).toEqual({
      step: 3,
      db: {
        password: "[masked: password]",
        dbPassword: "[masked: password]",
        apiKey: "[masked: api key]",
        maxToken: 512,
        authorization: "[masked: authorization]",
      },
      notes: ["deploy with [masked: github token]", { url: "https://[masked: url credentials]@h.example/x" }],
    });
    expect(snapshot).toEqual(copy);
    // A "__proto__" key in parsed JSON stays data.
    const evil = maskJson(JSON.parse('{"__proto__":{"polluted":"Bearer abc"}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(evil)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(evil, "__proto__")?.value).toEqual({ polluted: "Bearer [masked: token]" });
  });
});

describe("masking time", () => {
  /** 1 MB inputs shaped against each pattern (runs of prefixes, unclosed quotes, missing END lines…). */
  const MB = 1 << 20;
  const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);
  const ADVERSARIAL: Record<string, string> = {
    "JWT starts": fill("eyJ-"),
    "JWT without signature dot": fill("eyJaaaa."),
    "PEM headers": fill("-----BEGIN PRIVATE KEY-----"),
    "PEM header then wrong END lines": `-----BEGIN PRIVATE KEY-----${fill("-----END X-----")}`,
    "password= runs": fill("password="),
    "unclosed JSON values": fill('password: "'),
    "escapes in values": `token="${fill("\\a")}`,
    "escaped quotes": fill('\\"'),
    "key then spaces": `password${" ".repeat(MB)}x`,
    "URL credential starts": fill("://a:"),
    "Bearer runs": fill("Bearer "),
    "Basic runs": fill("Basic "),
    "provider key prefixes": fill("sk-"),
    "GitHub prefixes": fill("ghp_"),
    "AWS prefixes": fill("AKIA"),
    "hex run": `${fill("a")}g`,
    "short hex words": fill("ab "),
    mixed: fill('password="\\'),
  };

  it("masks 1 MB of adversarial text quickly, whatever its shape", async () => {
    for (const [shape, text] of Object.entries(ADVERSARIAL)) {
      // workerd's clock advances at I/O, so the wait after the call lets it see the call's time.
      const t0 = Date.now();
      maskSecrets(text);
      await scheduler.wait(1);
      // 2 s on a quiet machine (test/patience.ts): catastrophic backtracking on 1 MB takes minutes, not seconds.
      expect(Date.now() - t0, `${shape} took too long`).toBeLessThan(patient(2_000));
    }
  });
});
