import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StuckConfig, StuckEntry } from "../../../src/store/read-models";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { call, escapeHtml, getText, uid } from "./harness";

// The /stuck page and the overview's Stuck card, through the real Worker with real Access tokens, on a foreign
// fixture agent (LossyAgent: a plain agents-SDK Agent with both mixins) whose run went silent. The test Worker
// sets no STUCK_* vars, so the defaults apply (no progress: 15 minutes); the run's rows are aged past that, as
// the reconciliation tests age theirs.

const MIN = 60_000;
const name = `stuck-route-${uid()}`;
let runId: string;

const json = async <T>(path: string, who: "viewer" | "operator" = "viewer") => {
  const r = await call(path, { as: who, headers: { Accept: "application/json" } });
  return { status: r.status, body: (await r.json()) as T };
};
const mine = (entries: StuckEntry[]) => entries.filter((e) => e.agentName === name);

beforeAll(async () => {
  await publishEnvTeamKeys();
  const agent = await getAgentByName(env.LossyAgent, name);
  runId = await agent.startHeld();
  await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = ? AND snapshot_preview IS NOT NULL", [name, runId], (r) => r.length === 1);
  // Silent for 16 minutes: past the default 15.
  await env.DB.prepare("UPDATE runs SET last_seen = last_seen - ? WHERE agent_name = ?")
    .bind(16 * MIN, name)
    .run();
}, 60_000);

afterAll(async () => {
  await (await getAgentByName(env.LossyAgent, name)).release();
});

describe("/stuck", () => {
  it("lists the silent run: which rule fired, since when and for how long, why, and links to the run and the agent's actions", async () => {
    const page = await getText("/stuck", "viewer");
    expect(page.status).toBe(200);
    expect(page.type).toMatch(/text\/html/);
    const row = new RegExp(`<tr data-rule="no_progress" data-subject="${runId}">([\\s\\S]*?)</tr>`).exec(page.text);
    expect(row, "a no_progress row for the run").not.toBeNull();
    const cells = row![1]!;
    expect(cells).toContain("running, no progress");
    expect(cells).toContain(`LossyAgent · ${name}`);
    expect(cells).toContain(`href="${escapeHtml(`/runs/${runId}?agentClass=LossyAgent&agentName=${name}`)}"`);
    expect(cells).toContain(`href="/agents/LossyAgent/${name}#admin-actions"`);
    expect(cells).toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ<div class="muted" data-testid="stuck-for">for 16m<\/div>/);
    expect(cells).toContain(escapeHtml('this fiber "long-export" has had no progress event since'));
    // The thresholds in force, and where they come from.
    expect(page.text).toContain('<td class="num" data-testid="threshold-no_progress">15</td>');
    expect(page.text).toContain("STUCK_NO_PROGRESS_MINUTES");
    expect(page.text).toContain('<td class="num" data-testid="threshold-skipped_no_reason">1440</td>');
  });

  it("answers JSON with the config and the entries, filtered by rule and agent class", async () => {
    const all = await json<{ config: StuckConfig; entries: StuckEntry[] }>("/stuck");
    expect(all.status).toBe(200);
    expect(all.body.config).toEqual({ no_progress: 15, incident_no_attempt: 15, alarm_overdue: 5, skipped_no_reason: 1440 });
    expect(mine(all.body.entries)).toEqual([expect.objectContaining({ rule: "no_progress", subjectKind: "run", subjectId: runId, agentClass: "LossyAgent" })]);
    // Each entry carries its facts and, as `detail`, the same sentence the page shows.
    const [entry] = mine(all.body.entries) as (StuckEntry & { detail: string })[];
    expect(entry).toMatchObject({ runKind: "fiber", runName: "long-export", confirmedAt: null, wakeAt: null });
    expect(entry!.detail).toMatch(/^No progress: this fiber "long-export" has had no progress event since \S+Z \(16m, threshold 15m\); /);

    expect(mine((await json<{ entries: StuckEntry[] }>("/stuck?rule=no_progress&agentClass=LossyAgent")).body.entries)).toHaveLength(1);
    expect(mine((await json<{ entries: StuckEntry[] }>("/stuck?rule=incident_no_attempt")).body.entries)).toEqual([]);
    expect(mine((await json<{ entries: StuckEntry[] }>("/stuck?agentClass=ProbeAgent")).body.entries)).toEqual([]);
    const filtered = await getText("/stuck?rule=alarm_overdue&agentClass=NoSuchClass", "viewer");
    expect(filtered.text).toContain("Nothing stuck under alarm_overdue in NoSuchClass.");
  });

  it("the bulk preview of a stuck rule says why each agent matched, with the finding in the same words", async () => {
    type Target = { agentClass: string; agentName: string; why: string; stuck: StuckEntry | null };
    const preview = await json<{ ok: true; value: { targets: Target[] } }>("/bulk?stuckRule=no_progress&agentClass=LossyAgent", "operator");
    expect(preview.status).toBe(200);
    const target = preview.body.value.targets.find((t) => t.agentName === name);
    expect(target?.stuck).toMatchObject({ rule: "no_progress", subjectId: runId, runKind: "fiber" });
    expect(target?.why).toMatch(
      /^class LossyAgent; stuck \(no_progress\) since \S+Z: No progress: this fiber "long-export" has had no progress event since \S+Z \(16m, /,
    );
    const page = await getText("/bulk?stuckRule=no_progress&agentClass=LossyAgent", "operator");
    expect(page.text).toContain(escapeHtml("stuck (no_progress) since"));
    expect(page.text).toContain(escapeHtml('No progress: this fiber "long-export" has had no progress event since'));
  });

  it("refreshes the list as an htmx fragment with the same filters, without the page shell", async () => {
    const page = await getText("/stuck?rule=no_progress&agentClass=LossyAgent", "viewer");
    expect(page.text).toContain(`hx-get="${escapeHtml("/partials/stuck?rule=no_progress&agentClass=LossyAgent")}"`);
    const fragment = await getText("/partials/stuck?rule=no_progress&agentClass=LossyAgent", "viewer", { "HX-Request": "true" });
    expect(fragment.status).toBe(200);
    expect(fragment.text).not.toContain("<html");
    expect(fragment.text).toContain(`data-subject="${runId}"`);
    expect((await getText("/partials/stuck?rule=incident_no_attempt&agentClass=LossyAgent", "viewer", { "HX-Request": "true" })).text).not.toContain(
      `data-subject="${runId}"`,
    );
    const bad = await getText("/partials/stuck?rule=slow", "viewer", { "HX-Request": "true" });
    expect(bad.status).toBe(400);
    expect(bad.text).toBe('rule must be one of no_progress, incident_no_attempt, alarm_overdue, skipped_no_reason (got "slow")');
  });

  it("refuses an unknown rule with a 400 a person understands, as a page and as JSON", async () => {
    const message = 'rule must be one of no_progress, incident_no_attempt, alarm_overdue, skipped_no_reason (got "slow")';
    const page = await getText("/stuck?rule=slow", "viewer");
    expect(page.status).toBe(400);
    expect(page.text).toContain(`<p class="error-message">${escapeHtml(message)}</p>`);
    const body = await json<{ ok: boolean; error: { code: string; message: string } }>("/stuck?rule=slow");
    expect(body).toEqual({ status: 400, body: { ok: false, error: { code: "invalid_input", message } } });
    const long = await json<{ ok: boolean; error: { message: string } }>(`/stuck?agentClass=${"A".repeat(501)}`);
    expect(long).toEqual({ status: 400, body: { ok: false, error: { code: "invalid_input", message: "agentClass is longer than 500 characters" } } });
  });

  it("needs a signed-in user", async () => {
    expect((await call("/stuck")).status).toBe(401);
  });
});

describe("the overview's Stuck card", () => {
  it("counts the findings, is red when there are any, and links to /stuck", async () => {
    const page = await getText("/", "viewer");
    const card = /<a class="card ([^"]*)" href="\/stuck" data-figure="\d+" data-testid="count-Stuck"><div class="n">(\d+)<\/div>/.exec(page.text);
    expect(card, "a Stuck card linking to /stuck").not.toBeNull();
    expect(card![1]!.trim()).toBe("alert");
    expect(Number(card![2])).toBeGreaterThanOrEqual(1);
    const data = await json<{ stuck: { n: number; capped: boolean } }>("/");
    expect(data.body.stuck.n).toBeGreaterThanOrEqual(1);
    expect(data.body.stuck.capped).toBe(false);
  });

  it("drops the run once it ends", async () => {
    await (await getAgentByName(env.LossyAgent, name)).release();
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = ? AND outcome = 'completed'", [name, runId], (r) => r.length === 1);
    expect(mine((await json<{ entries: StuckEntry[] }>("/stuck")).body.entries)).toEqual([]);
    const page = await getText("/stuck", "viewer");
    expect(page.text).not.toContain(`data-subject="${runId}"`);
  });
});

describe("escaping", () => {
  it("shows an agent's name, a fiber's name and a filter value carrying markup as text", async () => {
    const markup = "<script>alert(1)</script><img src=x onerror=alert(2)>";
    const agentName = `stuck-xss-${uid()} ${markup}#agent`;
    const agent = await getAgentByName(env.ProbeAgent, agentName);
    await agent.startHangingFiber(undefined, `hang ${markup}#fiber`);
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND snapshot_preview IS NOT NULL", [agentName], (r) => r.length === 1);
    await env.DB.prepare("UPDATE runs SET last_seen = last_seen - ? WHERE agent_name = ?")
      .bind(16 * MIN, agentName)
      .run();

    for (const path of ["/stuck?agentClass=ProbeAgent", `/stuck?agentClass=${encodeURIComponent(`${markup}#filter`)}`]) {
      const page = await getText(path, "operator");
      expect(page.status).toBe(200);
      expect(page.text).not.toContain("<script>alert(1)");
      expect(page.text).not.toMatch(/<img[^>]*onerror/i);
    }
    const listed = (await getText("/stuck?agentClass=ProbeAgent", "operator")).text;
    expect(listed).toContain(escapeHtml(`${markup}#agent`));
    expect(listed).toContain(escapeHtml(`"hang ${markup}#fiber"`));
    expect((await getText(`/stuck?agentClass=${encodeURIComponent(`${markup}#filter`)}`, "operator")).text).toContain(escapeHtml(`${markup}#filter`));
  });
});
