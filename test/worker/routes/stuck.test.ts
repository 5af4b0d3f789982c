import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bulkMatchWords } from "../../../console/words";
import type { BulkMatch, StuckConfig, StuckEntry } from "../../../src/store/read-models";
import { pollRows, pollRunRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, findAll, hrefs, mustTestId } from "../html";
import { call, escapeHtml, getOverview, getText, uid } from "./harness";

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
  await env.DB.prepare(`UPDATE runs SET last_seen = last_seen - ?1, listed_at = (last_seen - ?1) - ((last_seen - ?1) % 60000) WHERE agent_name = ?2`)
    .bind(16 * MIN, name)
    .run();
});

afterAll(async () => {
  await (await getAgentByName(env.LossyAgent, name)).release();
});

describe("/stuck", () => {
  it("lists the silent run: which rule fired, since when and for how long, why, and links to the run and the agent's actions", async () => {
    const page = await getText("/stuck", "viewer");
    expect(page.status).toBe(200);
    expect(page.type).toMatch(/text\/html/);
    const rows = findAll(page.text, "data-subject", runId);
    expect(rows.map((r) => [r.attrs["data-rule"], r.attrs["data-agent"]])).toEqual([["no_progress", `LossyAgent/${name}`]]);
    const row = rows[0]!;
    expect(hrefs(row.html)).toEqual([`/runs/${runId}?agentClass=LossyAgent&agentName=${name}`, `/agents/LossyAgent/${name}#admin-actions`]);
    // Since when (the run's last sign of life, aged 16 minutes above), and for how long.
    const silentFor = Date.now() - Number(row.attrs["data-since"]);
    expect(silentFor).toBeGreaterThanOrEqual(16 * MIN);
    expect(silentFor).toBeLessThan(17 * MIN);
    expect(byTestId(row.html, "stuck-for")).toBeDefined();
    // Why, in the same words the JSON's detail carries (checked in the next test).
    const detail = (await json<{ entries: (StuckEntry & { detail: string })[] }>("/stuck")).body.entries.find((e) => e.subjectId === runId)!.detail;
    expect(mustTestId(row.html, "stuck-detail").text).toBe(detail);
    // The thresholds in force, and where they come from.
    expect(mustTestId(page.text, "threshold-no_progress").text).toBe("15");
    expect(page.text).toContain("STUCK_NO_PROGRESS_MINUTES");
    expect(mustTestId(page.text, "threshold-skipped_no_reason").text).toBe("1440");
  });

  it("answers JSON with the config and the entries, filtered by rule and agent class", async () => {
    const all = await json<{ config: StuckConfig; entries: StuckEntry[] }>("/stuck");
    expect(all.status).toBe(200);
    expect(all.body.config).toEqual({ no_progress: 15, incident_no_attempt: 15, alarm_overdue: 5, skipped_no_reason: 1440 });
    expect(mine(all.body.entries)).toEqual([expect.objectContaining({ rule: "no_progress", subjectKind: "run", subjectId: runId, agentClass: "LossyAgent" })]);
    // Each entry carries its facts and, as `detail`, the same sentence the page shows.
    const [entry] = mine(all.body.entries) as (StuckEntry & { detail: string })[];
    expect(entry).toMatchObject({ runKind: "fiber", runName: "long-export", confirmedAt: null, wakeAt: null });
    // The detail is a sentence about this run: it names it.
    expect(entry!.detail).toContain("long-export");

    expect(mine((await json<{ entries: StuckEntry[] }>("/stuck?rule=no_progress&agentClass=LossyAgent")).body.entries)).toHaveLength(1);
    expect(mine((await json<{ entries: StuckEntry[] }>("/stuck?rule=incident_no_attempt")).body.entries)).toEqual([]);
    expect(mine((await json<{ entries: StuckEntry[] }>("/stuck?agentClass=ProbeAgent")).body.entries)).toEqual([]);
    const filtered = await getText("/stuck?rule=alarm_overdue&agentClass=NoSuchClass", "viewer");
    expect(byTestId(filtered.text, "stuck-none")).toBeDefined();
    expect(byTestId(filtered.text, "stuck")).toBeUndefined();
  });

  it("the bulk preview of a stuck rule says why each agent matched, with the finding in the same words", async () => {
    type Target = { agentClass: string; agentName: string; why: string; matched: BulkMatch; stuck: StuckEntry | null };
    const preview = await json<{ ok: true; value: { targets: Target[] } }>("/bulk?stuckRule=no_progress&agentClass=LossyAgent", "operator");
    expect(preview.status).toBe(200);
    const target = preview.body.value.targets.find((t) => t.agentName === name);
    expect(target?.stuck).toMatchObject({ rule: "no_progress", subjectId: runId, runKind: "fiber" });
    // Why: the criteria it met, then the finding's own sentence (the one /stuck shows).
    const detail = (await json<{ entries: (StuckEntry & { detail: string })[] }>("/stuck")).body.entries.find((e) => e.subjectId === runId)!.detail;
    expect(target?.why).toBe(`${bulkMatchWords(target!)}: ${detail}`);
    const page = await getText("/bulk?stuckRule=no_progress&agentClass=LossyAgent", "operator");
    const row = findAll(mustTestId(page.text, "bulk-targets").html, "data-agent", `LossyAgent/${name}`)[0];
    expect(row?.attrs["data-stuck-rule"]).toBe("no_progress");
    expect(row?.text).toContain(target!.why);
  });

  it("refreshes the list as an htmx fragment with the same filters, without the page shell", async () => {
    const page = await getText("/stuck?rule=no_progress&agentClass=LossyAgent", "viewer");
    expect(findAll(page.text, "id", "stuck-live")[0]?.attrs["hx-get"]).toBe("/partials/stuck?rule=no_progress&agentClass=LossyAgent");
    const fragment = await getText("/partials/stuck?rule=no_progress&agentClass=LossyAgent", "viewer", { "HX-Request": "true" });
    expect(fragment.status).toBe(200);
    expect(fragment.text).not.toContain("<html");
    expect(findAll(fragment.text, "data-subject", runId)).toHaveLength(1);
    const other = await getText("/partials/stuck?rule=incident_no_attempt&agentClass=LossyAgent", "viewer", { "HX-Request": "true" });
    expect(findAll(other.text, "data-subject", runId)).toEqual([]);
    const bad = await getText("/partials/stuck?rule=slow", "viewer", { "HX-Request": "true" });
    expect(bad.status).toBe(400);
    // htmx gets the refusal's sentence as plain text: the JSON body's message.
    const refused = await json<{ error: { message: string } }>("/stuck?rule=slow");
    expect(bad.text).toBe(refused.body.error.message);
  });

  it("refuses an unknown rule with a 400 a person understands, as a page and as JSON", async () => {
    const body = await json<{ ok: boolean; error: { code: string; message: string } }>("/stuck?rule=slow");
    expect(body).toMatchObject({ status: 400, body: { ok: false, error: { code: "invalid_input" } } });
    // A sentence that names the field and what was sent.
    expect(body.body.error.message).toContain("rule");
    expect(body.body.error.message).toContain("slow");
    const page = await getText("/stuck?rule=slow", "viewer");
    expect(page.status).toBe(400);
    const shown = mustTestId(page.text, "error-message");
    expect(shown.attrs["data-code"]).toBe("invalid_input");
    expect(shown.text).toBe(body.body.error.message);
    const long = await json<{ ok: boolean; error: { code: string; message: string } }>(`/stuck?agentClass=${"A".repeat(501)}`);
    expect(long).toMatchObject({ status: 400, body: { ok: false, error: { code: "invalid_input" } } });
    expect(long.body.error.message).toContain("agentClass");
  });

  it("needs a signed-in user", async () => {
    expect((await call("/stuck")).status).toBe(401);
  });
});

describe("the overview's Stuck card", () => {
  it("counts the findings, is red when there are any, and links to /stuck", async () => {
    const page = await getOverview("viewer");
    const card = mustTestId(page.text, "count-Stuck").attrs;
    expect(card.href).toBe("/stuck");
    expect(card.class!.split(" ")).toContain("alert");
    expect(Number(card["data-figure"])).toBeGreaterThanOrEqual(1);
    const data = await json<{ stuck: { n: number; capped: boolean } }>("/");
    expect(data.body.stuck.n).toBeGreaterThanOrEqual(1);
    expect(data.body.stuck.capped).toBe(false);
  });

  it("drops the run once it ends", async () => {
    await (await getAgentByName(env.LossyAgent, name)).release();
    // A healthy completion: the row leaves D1 with it (the console reads the run from R2).
    await pollRunRows<{ fiber_id: string; outcome: string | null }>(
      name,
      (r) => r.fiber_id === runId && r.outcome === "completed",
      (r) => r.length === 1,
    );
    expect(mine((await json<{ entries: StuckEntry[] }>("/stuck")).body.entries)).toEqual([]);
    const page = await getText("/stuck", "viewer");
    expect(findAll(page.text, "data-subject", runId)).toEqual([]);
  });
});

describe("escaping", () => {
  it("shows an agent's name, a fiber's name and a filter value carrying markup as text", async () => {
    const markup = "<script>alert(1)</script><img src=x onerror=alert(2)>";
    const agentName = `stuck-xss-${uid()} ${markup}#agent`;
    const agent = await getAgentByName(env.ProbeAgent, agentName);
    await agent.startHangingFiber(undefined, `hang ${markup}#fiber`);
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND snapshot_preview IS NOT NULL", [agentName], (r) => r.length === 1);
    await env.DB.prepare(`UPDATE runs SET last_seen = last_seen - ?1, listed_at = (last_seen - ?1) - ((last_seen - ?1) % 60000) WHERE agent_name = ?2`)
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
