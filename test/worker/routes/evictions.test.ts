import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { beforeAll, expect, it } from "vitest";
import { rejectionOf } from "../../helpers";
import { patient } from "../../patience";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, mustTestId } from "../html";
import { auditOf, csrfFromPage, getText, postForm, registerAgent, uid } from "./harness";

// Agent pages and actions while the agent is being evicted (`ctx.abort()`, over and over, landing in the
// middle of reads and actions): never a 5xx (harness.call checks every answer), a typed error in the page
// when the agent could not answer, and an audit row for every action, completed (none left pending).

const enc = encodeURIComponent;
const ROUNDS = 16;
/** Every admin read of the fixture takes this long, so an eviction lands inside reads and actions. */
const SLOW_MS = 40;

beforeAll(async () => {
  await publishEnvTeamKeys();
});

it("reads and actions during repeated evictions answer below 500 and are always audited", { timeout: patient(120_000) }, async () => {
  const name = `evict-${uid()}`;
  await registerAgent("DurableWorkAgent", name);
  const first = await getAgentByName(env.DurableWorkAgent, name);
  await first.setSlowReads(SLOW_MS);
  const runId = await first.startTicker();
  const base = `/agents/DurableWorkAgent/${enc(name)}`;
  const csrf = csrfFromPage((await getText(base, "operator")).text);

  type ActionBody = { ok: boolean; error?: { code: string; message: string } };
  const actions: { status: number; body: ActionBody }[] = [];
  const pages: string[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const stub = await getAgentByName(env.DurableWorkAgent, name);
    // Work to act on, when the agent lets us start it (an eviction may cut this short too).
    if (i % 4 === 0) await stub.startTicker().catch(() => {});
    const act = i % 2 === 0 ? "force-idle" : "trigger-alarm";
    const [, page, live, run, action] = await Promise.all([
      // Lands while the reads and the action below are inside the agent.
      scheduler.wait(SLOW_MS / 2 + (i % 3) * 5).then(async () => void (await rejectionOf(stub.evict()))),
      getText(base, "operator"),
      getText(`${base}/live`, "viewer", { "HX-Request": "true" }),
      getText(`${base}/runs/${enc(runId)}`, "viewer"),
      postForm(
        `/actions/${act}`,
        "operator",
        { agentClass: "DurableWorkAgent", agentName: name, reason: `round ${i}` },
        { csrf, headers: { Accept: "application/json" } },
      ),
    ]);
    expect(page.status).toBe(200);
    expect(live.status).toBe(200);
    expect([200, 404]).toContain(run.status);
    pages.push(page.text, live.text);
    actions.push({ status: action.status, body: (await action.json()) as ActionBody });
  }

  // A failed action says why, as a typed error with a 4xx; never a stack trace.
  for (const a of actions) {
    if (a.body.ok) expect(a.status).toBe(200);
    else {
      expect(a.status).toBe(424);
      expect(["unavailable", "timeout"]).toContain(a.body.error!.code);
    }
  }
  // A page whose agent could not answer says so in words; none shows a stack.
  for (const p of pages) {
    expect(p).not.toMatch(/\bat \S+ \(|Internal Server Error/);
    if (!byTestId(p, "agent-status")) expect(mustTestId(p, "live-error").text).not.toBe("");
  }
  // Every action has its row, completed with the outcome its caller was told; none left pending.
  const audit = await auditOf(name);
  expect(audit.map((a) => a.reason)).toEqual(Array.from({ length: ROUNDS }, (_, i) => `round ${i}`));
  expect(audit.map((a) => a.result)).toEqual(actions.map((a) => (a.body.ok ? expect.stringMatching(/^(ok|noop)$/) : "error")));
  await rejectionOf((await getAgentByName(env.DurableWorkAgent, name)).evict());
  console.log(
    `[evictions] ${ROUNDS} rounds: ${actions.filter((a) => !a.body.ok).length} action(s) failed typed, ${pages.filter((p) => p.includes("Live state unavailable")).length} page(s) showed the live error`,
  );
});
