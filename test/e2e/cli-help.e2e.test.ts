import { spawn } from "node:child_process";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../scripts/wrangler-config.ts";
import { ADMIN_ACTION_NAMES, ADMIN_ACTIONS, BULK_ACTION_NAMES, inputFields } from "../../src/admin-rpc/actions";

/**
 * The CLI's verbs and help come from ADMIN_ACTIONS: every action is listed with its fields and taken by its slug,
 * with nothing per action in scripts/cli.mjs. No wrangler here: a loopback server stands in for the console and
 * records what the CLI sends.
 */

/** Runs scripts/cli.mjs under this Node; resolves with its exit code and output. */
function cli(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ["scripts/cli.mjs", ...args], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (d) => (out += String(d)));
    p.stderr.on("data", (d) => (out += String(d)));
    p.on("close", (code) => resolve({ code, out: out.trim() }));
  });
}

const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

describe("the CLI's help", () => {
  it("lists every ADMIN_ACTIONS verb with its label and its fields, and exits 0 when asked", async () => {
    const r = await cli(["--help"]);
    expect(r.code).toBe(0);
    for (const name of ADMIN_ACTION_NAMES) {
      const { slug, label, scope } = ADMIN_ACTIONS[name];
      const line = r.out.split("\n").find((l) => l.trim().startsWith(`${slug} `));
      expect(line, `a help line for ${slug}`).toBeDefined();
      expect(line).toContain(label);
      expect(line).toContain("--reason R");
      for (const f of inputFields(name).filter((f) => f !== "reason")) expect(line).toContain(scope === "op" && f === "opId" ? `<${f}>` : `--${kebab(f)}`);
    }
  });

  it("offers every bulk action of ADMIN_ACTIONS to `bulk`, and only those", async () => {
    const r = await cli(["--help"]);
    const verbs = /bulk <([^>]+)>/.exec(r.out)?.[1]?.split("|");
    expect(verbs).toEqual(BULK_ACTION_NAMES.map((a) => ADMIN_ACTIONS[a].slug));
  });

  it("without a command: the help and exit 2; an unknown verb: one line and exit 2", async () => {
    const none = await cli([]);
    expect(none.code).toBe(2);
    expect(none.out).toContain("admin actions");
    const bad = await cli(["reboot", "A", "b", "--reason", "x"]);
    expect(bad).toEqual({ code: 2, out: '✖ unknown command "reboot"; try --help' });
  });
});

describe("the CLI takes each action by its slug, its fields as the schema names them", () => {
  let stub: Server;
  const posted: { path: string; form: Record<string, string> }[] = [];
  const read = (req: IncomingMessage) =>
    new Promise<string>((r) => {
      let b = "";
      req.on("data", (d) => (b += String(d)));
      req.on("end", () => r(b));
    });

  beforeAll(async () => {
    stub = createServer(async (req, res) => {
      const json = (v: unknown) => res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(v));
      if (req.url === "/api/csrf") return json({ token: "t" });
      const form = Object.fromEntries(new URLSearchParams(await read(req)));
      posted.push({ path: req.url ?? "", form });
      // The console's answer: facts plus its words (describe), as worker/routes/actions.tsx sends them.
      json({ ok: true, value: {}, describe: { title: "Pause recovery done.", detail: "The agent holds its fiber recovery back.", clean: true } });
    });
    await new Promise<void>((r) => stub.listen(0, "127.0.0.1", r));
  });
  afterAll(() => stub?.close());

  const url = () => `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;

  it("pause-recovery (no CLI code of its own): posts its fields and prints the console's words", async () => {
    const r = await cli(["pause-recovery", "SessionAgent", "s-1", "--hours", "2", "--reason", "LLM bill", "--url", url()]);
    expect(r).toEqual({ code: 0, out: "✓ SessionAgent s-1: Pause recovery done. The agent holds its fiber recovery back." });
    expect(posted.at(-1)).toEqual({ path: "/actions/pause-recovery", form: { agentClass: "SessionAgent", agentName: "s-1", reason: "LLM bill", hours: "2" } });
  });

  it("resolve-op: the op id after the agent, --result-ref as resultRef", async () => {
    await cli(["resolve-op", "SessionAgent", "s-1", "op-7", "--resolution", "rerun", "--result-ref", "ticket-9", "--reason", "checked", "--url", url()]);
    expect(posted.at(-1)).toEqual({
      path: "/actions/resolve-op",
      form: { agentClass: "SessionAgent", agentName: "s-1", reason: "checked", opId: "op-7", resolution: "rerun", resultRef: "ticket-9" },
    });
  });

  it("a missing reason or a missing op id is a usage error before anything is sent", async () => {
    const before = posted.length;
    expect((await cli(["resume-recovery", "SessionAgent", "s-1", "--url", url()])).code).toBe(2);
    const r = await cli(["resolve-op", "SessionAgent", "s-1", "--resolution", "rerun", "--reason", "x", "--url", url()]);
    expect(r.code).toBe(2);
    expect(r.out).toContain("usage: npm run cli -- resolve-op <Class> <name> <opId>");
    expect(posted.length).toBe(before);
  });
});
