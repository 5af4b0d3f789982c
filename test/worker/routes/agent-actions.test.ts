import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { NO_MIXIN_SENTENCE } from "../../../console/components/actions";
import { pollRows, rejectionOf } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { auditOf, csrfFromPage, escapeHtml, getText, postForm, registerAgent, uid } from "./harness";

// The agent page offers only actions that will work: none on an agent without the admin mixin (one
// sentence says why, and the action routes refuse it with a 4xx and an audit row); on one with the mixin,
// forms that say what force idle will do there, and a result that says what it did, run by run.

const enc = encodeURIComponent;
const HX = { "HX-Request": "true" };
const JSON_ACCEPT = { Accept: "application/json" };

beforeAll(async () => {
  await publishEnvTeamKeys();
});

/** The operator's CSRF token, from the agent page itself (as the forms on it use it). */
const csrfOn = async (agentClass: string, name: string) => csrfFromPage((await getText(`/agents/${agentClass}/${enc(name)}`, "operator")).text);

describe("an agent class without the admin mixin", () => {
  let name: string;
  beforeAll(async () => {
    name = `nomixin-${uid()}`;
    await (await getAgentByName(env.TelemetryOnlyAgent, name)).work();
    await pollRows("SELECT 1 FROM agents WHERE agent_class = 'TelemetryOnlyAgent' AND agent_name = ?", [name], (r) => r.length === 1);
  });

  it("gets a read-only page: one sentence, its history, and no action forms", async () => {
    const page = await getText(`/agents/TelemetryOnlyAgent/${enc(name)}`, "operator");
    expect(page.status).toBe(200);
    expect(page.text).toContain(escapeHtml(NO_MIXIN_SENTENCE("TelemetryOnlyAgent")));
    expect(page.text).toContain("Run history");
    expect(page.text).not.toContain("hx-post=\"/actions/");
    expect(page.text).not.toContain("Confirm force idle");
    expect(page.text).not.toMatch(/does not implement|RPC receiver/);

    const live = await getText(`/agents/TelemetryOnlyAgent/${enc(name)}/live`, "viewer", HX);
    expect(live.status).toBe(200);
    expect(live.text).toContain("No live state:");
  });

  it("refuses both actions with 422 and a readable message, and audits every attempt", async () => {
    const csrf = await csrfOn("TelemetryOnlyAgent", name);
    const form = { agentClass: "TelemetryOnlyAgent", agentName: name, reason: "stop it" };
    const html = await postForm("/actions/force-idle", "operator", form, { csrf, headers: HX });
    expect(html.status).toBe(422);
    const fragment = await html.text();
    expect(fragment).toMatch(/^<div class="result bad" data-testid="action-result"><strong>Force idle refused:<\/strong> TelemetryOnlyAgent does not have the admin mixin/);

    const json = await postForm("/actions/trigger-alarm", "operator", form, { csrf, headers: JSON_ACCEPT });
    expect(json.status).toBe(422);
    expect(await json.json()).toEqual({
      ok: false,
      error: { code: "unsupported", message: "TelemetryOnlyAgent does not have the admin mixin (withAdminRpc from @agent-oncall/admin-rpc), so the console can neither read its live state nor act on it" },
    });

    expect((await auditOf(name)).map((a) => [a.action, a.result, a.error?.split(":")[0]])).toEqual([
      ["force_idle", "error", "unsupported"],
      ["trigger_alarm", "error", "unsupported"],
    ]);
  });
});

describe("an agent with Tasks runs and managed fibers", () => {
  it("shows every kind of live run, and force idle forms that say what they will do", async () => {
    const name = `work-${uid()}`;
    await registerAgent("DurableWorkAgent", name);
    const stub = await getAgentByName(env.DurableWorkAgent, name);
    const taskId = await stub.startTask();
    const fiberId = await stub.startManaged();

    const page = await getText(`/agents/DurableWorkAgent/${enc(name)}`, "operator");
    expect(page.status).toBe(200);
    for (const s of ["Tasks runs", taskId, "fetch-page-2 (running)", "Managed fibers", fiberId, "sync-crm", "managed_fiber"]) expect(page.text).toContain(s);
    expect(page.text).toContain("Cancels its Tasks runs, cancels its managed fibers, removes its run rows so nothing is recovered. A runFiber callback that nothing else stops is stopped by evicting the agent.");
    expect(page.text).toContain("hx-post=\"/actions/force-idle\"");

    const res = await postForm("/actions/force-idle", "operator", { agentClass: "DurableWorkAgent", agentName: name, reason: "stop the crawl" }, { csrf: csrfFromPage(page.text), headers: HX });
    expect(res.status).toBe(200);
    const fragment = await res.text();
    expect(fragment).toMatch(/^<div class="result ok" data-testid="action-result"><strong>Force idle done\.<\/strong> The agent is now idle\. Ended 2 run\(s\): 2 stopped\./);
    expect(fragment).toContain(`task <span class="mono">${taskId}</span> (crawl): stopped — cancelled through the Tasks API and settled`);
    expect(fragment).toContain(`managed_fiber <span class="mono">${fiberId}</span> (sync-crm): stopped — cancelled through cancelFiber and settled`);
  });

  it("says plainly, in the result, when work could not be stopped", async () => {
    const name = `noevict-${uid()}`;
    await registerAgent("NoEvictWorkAgent", name);
    const stub = await getAgentByName(env.NoEvictWorkAgent, name);
    const runId = await stub.startTicker();
    try {
      const res = await postForm("/actions/force-idle", "operator", { agentClass: "NoEvictWorkAgent", agentName: name, reason: "runaway" }, { csrf: await csrfOn("NoEvictWorkAgent", name), headers: HX });
      expect(res.status).toBe(200);
      const fragment = await res.text();
      expect(fragment).toMatch(/^<div class="result bad" data-testid="action-result"><strong>Force idle done\.<\/strong> The agent is now idle\. Ended 1 run\(s\): 0 stopped, 1 NOT stopped\./);
      expect(fragment).toContain('<p class="error-message" data-testid="force-idle-notice">1 run (ticker) still runs in memory:');
      expect(fragment).toContain(`fiber <span class="mono">${runId}</span> (ticker): NOT stopped`);
    } finally {
      await rejectionOf(stub.evict());
    }
  });
});
