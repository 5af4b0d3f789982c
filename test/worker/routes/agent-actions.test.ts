import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { AFTER_ACTION_TRIGGER, NO_MIXIN_SENTENCE } from "../../../console/components/actions";
import { pollRows, rejectionOf } from "../../helpers";
import { patient } from "../../patience";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, findAll, mustTestId } from "../html";
import { auditOf, csrfFromPage, exhaustedChatIncident, getText, postForm, registerAgent, stalledSession, uid } from "./harness";

// The agent page offers only actions that will work: none on an agent without the admin mixin (one
// sentence says why, and the action routes refuse it with a 4xx and an audit row); on one with the mixin,
// forms that say what force idle will do there, and a result that says what it did, run by run.

const enc = encodeURIComponent;
const HX = { "HX-Request": "true" };
const JSON_ACCEPT = { Accept: "application/json" };
/** The htmx posts a page offers to the action routes, and the action forms on it. */
const actionPosts = (html: string) => findAll(html, "hx-post").filter((f) => f.attrs["hx-post"]!.startsWith("/actions/"));
/** Force idle's runs in a result, by run id: what it did to each and what the SDK says of each now. */
const endedRun = (html: string, runId: string) => findAll(mustTestId(html, "force-idle-runs").html, "data-run", runId)[0]?.attrs;

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
    // The one sentence is the behaviour here: it is what the person reads instead of the forms.
    expect(mustTestId(page.text, "read-only").text).toBe(NO_MIXIN_SENTENCE("TelemetryOnlyAgent"));
    // Said once on the page, not again by the live panel; and reconciliation says what it does without asking.
    expect(page.text.split(NO_MIXIN_SENTENCE("TelemetryOnlyAgent").replaceAll("'", "&#39;")).length - 1).toBe(1);
    expect(mustTestId(page.text, "reconciled").text).toMatch(/^Reconciliation cannot ask this agent: a run of it silent past RECONCILE_UNKNOWN_AFTER_MINUTES/);
    expect(findAll(page.text, "id", "agent-history")).toHaveLength(1);
    expect(actionPosts(page.text)).toEqual([]);
    expect(findAll(page.text, "data-action-label")).toEqual([]);
    expect(byTestId(page.text, "live-error")).toBeUndefined();

    const live = await getText(`/agents/TelemetryOnlyAgent/${enc(name)}/live`, "viewer", HX);
    expect(live.status).toBe(200);
    expect(byTestId(live.text, "live-unsupported")).toBeDefined();
    expect(byTestId(live.text, "agent-status")).toBeUndefined();
  });

  it("refuses both actions with 422 and a readable message, and audits every attempt", async () => {
    const csrf = await csrfOn("TelemetryOnlyAgent", name);
    const form = { agentClass: "TelemetryOnlyAgent", agentName: name, reason: "stop it" };
    const html = await postForm("/actions/force-idle", "operator", form, { csrf, headers: HX });
    expect(html.status).toBe(422);
    const fragment = mustTestId(await html.text(), "action-result");
    expect(fragment.attrs["data-ok"]).toBe("false");

    const json = await postForm("/actions/trigger-alarm", "operator", form, { csrf, headers: JSON_ACCEPT });
    expect(json.status).toBe(422);
    const body = (await json.json()) as { ok: boolean; error: { code: string; message: string } };
    expect(body).toMatchObject({ ok: false, error: { code: "unsupported" } });
    // A readable refusal, the same one in both answers, naming the agent class it refuses.
    expect(body.error.message).toContain("TelemetryOnlyAgent");
    expect(fragment.text).toContain(body.error.message);

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
    const task = findAll(mustTestId(page.text, "live-tasks").html, "data-run", taskId)[0];
    expect(task?.attrs["data-state"]).toBe("running");
    expect(task?.text).toContain("fetch-page-2");
    expect(findAll(mustTestId(page.text, "managed-fibers").html, "data-run", fiberId)[0]?.attrs["data-name"]).toBe("sync-crm");
    expect(page.text).toContain(
      "Cancels its Tasks runs, cancels its managed fibers, removes its run rows so nothing is recovered. A runFiber callback that nothing else stops is stopped by evicting the agent.",
    );
    expect(actionPosts(page.text).map((f) => f.attrs["hx-post"])).toContain("/actions/force-idle");

    const res = await postForm(
      "/actions/force-idle",
      "operator",
      { agentClass: "DurableWorkAgent", agentName: name, reason: "stop the crawl" },
      { csrf: csrfFromPage(page.text), headers: HX },
    );
    expect(res.status).toBe(200);
    const fragment = await res.text();
    expect(mustTestId(fragment, "action-result").attrs["data-ok"]).toBe("true");
    // Each run: what force idle did, and what the SDK says of it now.
    expect(findAll(fragment, "data-stopped")).toHaveLength(2);
    expect(endedRun(fragment, taskId)).toMatchObject({ "data-kind": "task", "data-stopped": "true", "data-now": "stopped" });
    expect(endedRun(fragment, fiberId)).toMatchObject({ "data-kind": "managed_fiber", "data-stopped": "true", "data-now": "stopped" });
    expect(mustTestId(fragment, "after-state").attrs).toMatchObject({ "data-result": "ok", "data-verified": "true" });
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
      expect(mustTestId(fragment, "action-result").attrs["data-ok"]).toBe("false");
      expect(mustTestId(fragment, "after-state").attrs).toMatchObject({ "data-result": "partial", "data-verified": "true" });
      // The notice names the run that still runs (its wording is console/words' to choose).
      expect(mustTestId(fragment, "action-notice").text).toContain(runId);
      expect(mustTestId(fragment, "action-notice").attrs["data-code"]).toBe("still_runs");
      expect(findAll(fragment, "data-stopped")).toHaveLength(1);
      expect(endedRun(fragment, runId)).toMatchObject({ "data-kind": "fiber", "data-stopped": "false", "data-now": "running", "data-why": "unstoppable" });

      // Asked again as JSON (the CLI): the facts, and in `describe` the words the fragment shows for them.
      const json = await postForm(
        "/actions/force-idle",
        "operator",
        { agentClass: "NoEvictWorkAgent", agentName: name, reason: "runaway, again" },
        { csrf: await csrfOn("NoEvictWorkAgent", name), headers: JSON_ACCEPT },
      );
      const body = (await json.json()) as {
        value: { ended: { runId: string; why: string }[]; notice: unknown; after: { notice: unknown } };
        describe: { runs: Record<string, string>; notice: string; afterNotice: string; title: string; detail: string; clean: boolean };
      };
      // The answer's title and detail, as the page words them (the CLI prints these for any action), and not clean: partial.
      expect(body.describe).toMatchObject({
        clean: false,
        title: expect.stringMatching(/^Force idle.* work still runs\.$/),
        detail: expect.stringContaining("running"),
      });
      expect(body.value.ended).toEqual([expect.objectContaining({ runId, why: "unstoppable" })]);
      expect(body.value.notice).toEqual({ code: "unstopped", cause: "no_hook" });
      expect(body.value.after.notice).toEqual({ code: "still_runs" });
      const shown = findAll(mustTestId(fragment, "force-idle-runs").html, "data-run", runId)[0]!.text;
      expect(body.describe.runs[runId]).toBeTruthy();
      expect(shown).toContain(body.describe.runs[runId]);
      expect(body.describe.notice).toMatch(/^1 run \(.+\) still runs in memory: /);
      expect(body.describe.afterNotice).toContain(runId);
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
      expect(findAll(page.text, "name", "panel").map((i) => i.attrs.value)).toContain("agent-live");
      const history = findAll(page.text, "id", "agent-history")[0]?.attrs;
      expect(history?.["hx-get"]).toBe(`/agents/StubbornAgent/${enc(name)}/history`);
      expect(history?.["hx-trigger"]).toContain(AFTER_ACTION_TRIGGER);

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
      expect(mustTestId(result!, "after-state").attrs["data-result"]).toBe("partial");
      // The panel, out of band, as read back after the action: running, no run row, the callback in memory.
      expect(panel).toBeDefined();
      expect(mustTestId(panel!, "agent-status").attrs["data-status"]).toBe("running");
      expect(byTestId(panel!, "no-live-runs")).toBeDefined();
      expect(findAll(mustTestId(panel!, "in-memory-runs").html, "data-run").map((r) => r.attrs)).toEqual([{ "data-run": runId, "data-kind": "fiber" }]);

      // From another page (no panel asked for), the answer carries no out-of-band panel.
      const elsewhere = await postForm(
        "/actions/trigger-alarm",
        "operator",
        { agentClass: "StubbornAgent", agentName: name, reason: "recover now" },
        { csrf: csrfFromPage(page.text), headers: HX },
      );
      expect(elsewhere.status).toBe(200);
      expect(findAll(await elsewhere.text(), "hx-swap-oob")).toEqual([]);

      // The audit page says partial, with the sentence.
      const audit = await getText(`/audit?targetName=${enc(name)}&result=partial`, "viewer");
      expect(findAll(audit.text, "data-result", "partial")).toHaveLength(1);
      expect(mustTestId(audit.text, "audit-notice").text).toContain(runId);
    } finally {
      await rejectionOf(stub.evict());
    }
  });

  it("the run history fragment reflects the action once its events are in, without reloading the page", async () => {
    const s = await stalledSession("history");
    const base = `/agents/FaultySessionAgent/${enc(s.name)}`;
    const before = await getText(`${base}/history`, "viewer", HX);
    const outcomeOf = (html: string) => findAll(html, "data-run", s.runId)[0]?.attrs["data-outcome"];
    expect(outcomeOf(before.text)).toBe("running");
    const res = await postForm(
      "/actions/force-idle",
      "operator",
      { agentClass: "FaultySessionAgent", agentName: s.name, reason: "stalled turn", panel: "agent-live" },
      { csrf: await csrfOn("FaultySessionAgent", s.name), headers: HX },
    );
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(mustTestId(html, "after-state").attrs["data-result"]).toBe("ok");
    expect(mustTestId(html, "agent-status").attrs["data-status"]).toBe("idle");
    // What the page's delayed refresh fetches: the run closed force_idled (the console's client emitted it).
    await pollRows("SELECT 1 FROM runs WHERE fiber_id = ? AND outcome = 'force_idled'", [s.runId], (r) => r.length === 1);
    const after = await getText(`${base}/history`, "viewer", HX);
    expect(outcomeOf(after.text)).toBe("force_idled");
    // The session page's status and the incident page's facts refresh on the same event.
    const session = await getText(`/sessions/${enc(s.name)}`, "viewer");
    const status = mustTestId(session.text, "session-status").attrs;
    expect(status["data-live"]).toBe("true");
    expect(status["hx-get"]).toBeTruthy();
    expect(status["hx-trigger"]).toContain(AFTER_ACTION_TRIGGER);
  });

  it("the incident page re-reads its facts after an action on its agent", async () => {
    const { incidentId } = await exhaustedChatIncident();
    const page = await getText(`/incidents/${enc(incidentId)}`, "operator");
    const facts = mustTestId(page.text, "incident-facts");
    expect(facts.attrs).toMatchObject({ id: "incident-facts", "hx-swap": "outerHTML", "hx-trigger": AFTER_ACTION_TRIGGER });
    // It asks for a fragment: a whole page is never swapped in as markup (console/static/response-text.js).
    expect(facts.attrs["hx-select"]).toBeUndefined();
    const fragment = await getText(facts.attrs["hx-get"]!, "viewer", HX);
    expect(fragment.status).toBe(200);
    expect(fragment.text).not.toMatch(/<html[\s>]|<!doctype/i);
    const fresh = mustTestId(fragment.text, "incident-facts");
    expect(fresh.attrs).toMatchObject({ id: "incident-facts", "hx-get": facts.attrs["hx-get"], "hx-trigger": AFTER_ACTION_TRIGGER });
    expect(mustTestId(fresh.html, "incident-status").text).toContain("exhausted");
    expect(mustTestId(fresh.html, "incident-reason").text).toBe(mustTestId(facts.html, "incident-reason").text);
    expect(mustTestId(fresh.html, "incident-attempts").text).toBe(mustTestId(facts.html, "incident-attempts").text);
    // An incident the console does not hold: a sentence, not a page.
    const gone = await getText(`/incidents/${enc(`nope-${uid()}`)}/facts`, "viewer", HX);
    expect(gone.status).toBe(404);
    expect(gone.text).not.toMatch(/<html[\s>]|<!doctype/i);
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
      // 2 s on a quiet machine (test/patience.ts); the outcome below (busy, not a timeout's refusal) is the contract's proof.
      expect(Date.now() - t0).toBeLessThan(patient(2000));
      expect(json.status).toBe(200);
      const body = (await json.json()) as {
        ok: true;
        value: { outcome: string; result: string; busy: { kind: string; name: string }[]; after: { notice: { code: string } } };
        describe: { afterNotice: string };
      };
      expect(body.value).toMatchObject({ outcome: "busy", result: "partial", busy: [{ kind: "queued_callback", name: "holdTurn" }] });
      // The answer is facts; `describe` carries the console's words for them (what the CLI prints).
      expect(body.value.after.notice).toMatchObject({ code: "alarm_busy", holders: [{ kind: "queued_callback", name: "holdTurn" }] });
      expect(body.describe.afterNotice).toContain("holdTurn");

      const t1 = Date.now();
      const html = await postForm("/actions/trigger-alarm", "operator", form, { csrf, headers: HX });
      expect(Date.now() - t1).toBeLessThan(patient(2000));
      const fragment = await html.text();
      expect(mustTestId(fragment, "action-result").attrs["data-ok"]).toBe("false");
      expect(mustTestId(fragment, "after-state").attrs["data-result"]).toBe("partial");
      // The HTML says what the JSON says: the same notice, naming the callback.
      expect(mustTestId(fragment, "action-notice").attrs["data-code"]).toBe("alarm_busy");
      // Two answers a moment apart: the callback's running time ("for 0 s") may have ticked between them.
      const sansElapsed = (t: string) => t.replace(/for \d+ s\b/, "for … s");
      expect(sansElapsed(mustTestId(fragment, "action-notice").text)).toBe(sansElapsed(body.describe.afterNotice));
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
