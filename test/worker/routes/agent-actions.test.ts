import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { NO_MIXIN_SENTENCE } from "../../../console/components/actions";
import { pollRows, rejectionOf } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { auditOf, csrfFromPage, escapeHtml, exhaustedChatIncident, getText, postForm, registerAgent, stalledSession, uid } from "./harness";

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
    expect(page.text).not.toContain('hx-post="/actions/');
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
    expect(fragment).toMatch(
      /^<div class="result bad" data-testid="action-result"><strong>Force idle refused:<\/strong> TelemetryOnlyAgent does not have the admin mixin/,
    );

    const json = await postForm("/actions/trigger-alarm", "operator", form, { csrf, headers: JSON_ACCEPT });
    expect(json.status).toBe(422);
    expect(await json.json()).toEqual({
      ok: false,
      error: {
        code: "unsupported",
        message:
          "TelemetryOnlyAgent does not have the admin mixin (withAdminRpc from @agent-oncall/admin-rpc), so the console can neither read its live state nor act on it",
      },
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
    expect(page.text).toContain(
      "Cancels its Tasks runs, cancels its managed fibers, removes its run rows so nothing is recovered. A runFiber callback that nothing else stops is stopped by evicting the agent.",
    );
    expect(page.text).toContain('hx-post="/actions/force-idle"');

    const res = await postForm(
      "/actions/force-idle",
      "operator",
      { agentClass: "DurableWorkAgent", agentName: name, reason: "stop the crawl" },
      { csrf: csrfFromPage(page.text), headers: HX },
    );
    expect(res.status).toBe(200);
    const fragment = await res.text();
    expect(fragment).toMatch(
      /^<div class="result ok" data-testid="action-result"><strong>Force idle done\.<\/strong> The agent is now idle\. Ended 2 run\(s\): 2 stopped\./,
    );
    // Each run: what force idle did, and what the SDK says of it now.
    expect(fragment).toContain(
      `task <span class="mono">${taskId}</span> (crawl): stopped — cancelled through the Tasks API and settled · <strong>now: stopped (tasks.get says cancelled)</strong>`,
    );
    expect(fragment).toContain(
      `managed_fiber <span class="mono">${fiberId}</span> (sync-crm): stopped — cancelled through cancelFiber and settled · <strong>now: stopped (inspectFiber says aborted)</strong>`,
    );
    expect(fragment).toContain('<div data-testid="after-state" data-result="ok" data-verified="true">');
  });

  it("says plainly, in the result, when work could not be stopped", async () => {
    const name = `noevict-${uid()}`;
    await registerAgent("NoEvictWorkAgent", name);
    const stub = await getAgentByName(env.NoEvictWorkAgent, name);
    const runId = await stub.startTicker();
    try {
      const res = await postForm(
        "/actions/force-idle",
        "operator",
        { agentClass: "NoEvictWorkAgent", agentName: name, reason: "runaway" },
        { csrf: await csrfOn("NoEvictWorkAgent", name), headers: HX },
      );
      expect(res.status).toBe(200);
      const fragment = await res.text();
      // The agent, read back, still runs the callback: partial, in one sentence, and the agent is running.
      expect(fragment).toMatch(
        /^<div class="result bad" data-testid="action-result"><strong>Force idle done, but work still runs\.<\/strong> The agent is now running\. Ended 1 run\(s\): 0 stopped, 1 NOT stopped\./,
      );
      expect(fragment).toContain('<div data-testid="after-state" data-result="partial" data-verified="true">');
      expect(fragment).toContain(
        `<p class="error-message" data-testid="action-notice">Force idle did not stop everything: 1 piece of work still runs: a runFiber callback &#39;ticker&#39; (${runId}): it still runs in memory (its row is removed, so it is not recovered).</p>`,
      );
      expect(fragment).toContain(`fiber <span class="mono">${runId}</span> (ticker): NOT stopped`);
      expect(fragment).toContain("<strong>now: still running (its callback runs in memory; the SDK says running)</strong>");
    } finally {
      await rejectionOf(stub.evict());
    }
  });
});

describe("pages show the state after an action", () => {
  it("force idle from the agent page: the answer re-renders the live panel from the verified after-state, and says what still runs", async () => {
    const name = `stubborn-${uid()}`;
    await registerAgent("StubbornAgent", name);
    const stub = await getAgentByName(env.StubbornAgent, name);
    const runId = await stub.startStubborn("export-orders");
    try {
      const page = await getText(`/agents/StubbornAgent/${enc(name)}`, "operator");
      // The agent page's forms ask for the panel; its run history refreshes after an action.
      expect(page.text).toContain('<input type="hidden" name="panel" value="agent-live"/>');
      expect(page.text).toMatch(
        /<div id="agent-history" data-live="true" hx-get="\/agents\/StubbornAgent\/[^"]+\/history" hx-trigger="every \d+s, refresh, console:acted from:body delay:2s"/,
      );

      const res = await postForm(
        "/actions/force-idle",
        "operator",
        { agentClass: "StubbornAgent", agentName: name, reason: "export stuck", panel: "agent-live" },
        { csrf: csrfFromPage(page.text), headers: HX },
      );
      expect(res.status).toBe(200);
      expect(JSON.parse(res.headers.get("HX-Trigger") ?? "{}")).toEqual({
        "console:acted": { agentClass: "StubbornAgent", agentName: name, action: "force_idle" },
      });
      const html = await res.text();
      const [result, panel] = html.split('<div id="agent-live" hx-swap-oob="innerHTML">');
      expect(result).toContain('data-result="partial"');
      // The panel, out of band, as read back after the action: running, no run row, the callback in memory.
      expect(panel).toBeDefined();
      expect(panel).toContain('<dd data-testid="agent-status"><span class="badge info">running</span></dd>');
      expect(panel).toContain("No live runFiber rows.");
      expect(panel).toContain(
        `<table data-testid="in-memory-runs"><thead><tr><th>run</th><th>kind</th></tr></thead><tbody><tr><td class="mono">${runId}</td><td>fiber</td></tr></tbody></table>`,
      );

      // From another page (no panel asked for), the answer carries no out-of-band panel.
      const elsewhere = await postForm(
        "/actions/trigger-alarm",
        "operator",
        { agentClass: "StubbornAgent", agentName: name, reason: "recover now" },
        { csrf: csrfFromPage(page.text), headers: HX },
      );
      expect(elsewhere.status).toBe(200);
      expect(await elsewhere.text()).not.toContain("hx-swap-oob");

      // The audit page says partial, with the sentence.
      const audit = await getText(`/audit?targetName=${enc(name)}&result=partial`, "viewer");
      expect(audit.text).toContain('<td data-result="partial" data-col="result" data-label="result"><span class="badge warn">partial</span>');
      expect(audit.text).toContain('<div class="warn" data-testid="audit-notice">Force idle did not stop everything: 1 piece of work still runs:');
    } finally {
      await rejectionOf(stub.evict());
    }
  });

  it("the run history fragment reflects the action once its events are in, without reloading the page", async () => {
    const s = await stalledSession("history");
    const base = `/agents/FaultySessionAgent/${enc(s.name)}`;
    const before = await getText(`${base}/history`, "viewer", HX);
    expect(before.text).toContain(`<tr data-run="${s.runId}" data-outcome="running">`);
    const res = await postForm(
      "/actions/force-idle",
      "operator",
      { agentClass: "FaultySessionAgent", agentName: s.name, reason: "stalled turn", panel: "agent-live" },
      { csrf: await csrfOn("FaultySessionAgent", s.name), headers: HX },
    );
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('data-result="ok"');
    expect(html).toContain('<dd data-testid="agent-status"><span class="badge ok">idle</span></dd>');
    // What the page's delayed refresh fetches: the run closed force_idled (the console's client emitted it).
    await pollRows("SELECT 1 FROM runs WHERE fiber_id = ? AND outcome = 'force_idled'", [s.runId], (r) => r.length === 1);
    const after = await getText(`${base}/history`, "viewer", HX);
    expect(after.text).toContain(`<tr data-run="${s.runId}" data-outcome="force_idled">`);
    // The session page's status and the incident page's facts refresh on the same event.
    const session = await getText(`/sessions/${enc(s.name)}`, "viewer");
    expect(session.text).toMatch(
      /data-testid="session-status" data-live="true" hx-get="[^"]+" hx-trigger="every \d+s, refresh, console:acted from:body delay:2s"/,
    );
  });

  it("the incident page re-reads its facts after an action on its agent", async () => {
    const { incidentId } = await exhaustedChatIncident();
    const page = await getText(`/incidents/${enc(incidentId)}`, "operator");
    expect(page.text).toContain(
      `<dl class="facts" data-testid="incident-facts" id="incident-facts" hx-get="/incidents/${enc(incidentId)}" hx-select="#incident-facts" hx-swap="outerHTML" hx-trigger="console:acted from:body delay:2s">`,
    );
  });

  it("trigger alarm through the route while a queued callback holds the alarm loop: an answer in under 2 s, naming it, as JSON and as HTML", async () => {
    const name = `queued-${uid()}`;
    await registerAgent("StubbornAgent", name);
    const stub = await getAgentByName(env.StubbornAgent, name);
    await stub.startQueuedTurn();
    try {
      const csrf = await csrfOn("StubbornAgent", name);
      const form = { agentClass: "StubbornAgent", agentName: name, reason: "recover now" };
      const t0 = Date.now();
      const json = await postForm("/actions/trigger-alarm", "operator", form, { csrf, headers: JSON_ACCEPT });
      expect(Date.now() - t0).toBeLessThan(2000);
      expect(json.status).toBe(200);
      const body = (await json.json()) as {
        ok: true;
        value: { outcome: string; result: string; busy: { kind: string; name: string }[]; after: { notice: string } };
      };
      expect(body.value).toMatchObject({ outcome: "busy", result: "partial", busy: [{ kind: "queued_callback", name: "holdTurn" }] });
      expect(body.value.after.notice).toMatch(/^The alarm did not run: a queued callback 'holdTurn' is running/);

      const t1 = Date.now();
      const html = await postForm("/actions/trigger-alarm", "operator", form, { csrf, headers: HX });
      expect(Date.now() - t1).toBeLessThan(2000);
      const fragment = await html.text();
      expect(fragment).toMatch(
        /^<div class="result bad" data-testid="action-result"><strong>Trigger alarm: not run, the agent is busy\.<\/strong> Nothing was done\./,
      );
      expect(fragment).toContain("The alarm did not run: a queued callback &#39;holdTurn&#39; is running");
      expect((await auditOf(name)).map((a) => [a.action, a.result])).toEqual([
        ["trigger_alarm", "partial"],
        ["trigger_alarm", "partial"],
      ]);
      expect(await stub.holdCalls()).toBe(1);
    } finally {
      await stub.release();
    }
  });
});
