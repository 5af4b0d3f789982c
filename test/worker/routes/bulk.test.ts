import { env } from "cloudflare:workers";
import { Telemetry } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { bulkMatchWords } from "../../../console/words";
import type { BulkMatch, StuckEntry } from "../../../src/store/read-models";
import { pollRows, rejectionOf } from "../../helpers";
import { patient } from "../../patience";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, findAll, mustTestId } from "../html";
import { call, csrfFor, getText, postForm, uid } from "./harness";

/**
 * Bulk actions end to end in workerd: the preview reads the projections of real foreign fixture agents, the
 * confirm goes through the real Queue (agent-oncall-batches) and its consumer, each target through the audited
 * admin client to the real Durable Object, and progress is read back from the audit rows of the batch.
 */

const JSON_ACCEPT = { Accept: "application/json" };

beforeAll(async () => {
  await publishEnvTeamKeys();
});

/** An incident of `reason` reported for an agent as its own telemetry would (the registry learns of the agent too). */
async function incident(
  agentClass: string,
  agentName: string,
  reason: string,
  type: "chat.recovery.exhausted" | "chat.recovery.detected" = "chat.recovery.exhausted",
) {
  const incidentId = `req-${uid()}:msg-1`;
  const t = new Telemetry({ source: { agentClass, agentName }, queue: env.TELEMETRY_QUEUE });
  t.record(
    type,
    { attempt: 3, maxAttempts: 3, recoveryKind: "retry", ...(type === "chat.recovery.exhausted" ? { reason } : {}) },
    { incidentId, requestId: incidentId.split(":")[0]! },
  );
  await t.settle();
  await pollRows("SELECT 1 FROM incidents WHERE incident_id = ? AND agent_name = ?", [incidentId, agentName], (r) => r.length === 1);
  return incidentId;
}

type Preview = {
  ok: true;
  value: { targets: { agentClass: string; agentName: string; matched: BulkMatch; stuck: StuckEntry | null; why: string }[]; total: number; capped: boolean };
};
type Progress = {
  ok: true;
  value: {
    batchId: string;
    total: number;
    done: number;
    failed: number;
    running: number;
    queued: number;
    complete: boolean;
    result: string;
    targets: { agentClass: string; agentName: string; result: string; error: string | null }[];
  };
};

async function preview(query: string, who: "viewer" | "operator" = "viewer"): Promise<Preview["value"]> {
  const res = await call(`/bulk?${query}`, { as: who, headers: JSON_ACCEPT });
  expect(res.status).toBe(200);
  return ((await res.json()) as Preview).value;
}

/** Polls the batch's JSON progress until every target has finished. */
async function untilComplete(batchId: string, timeoutMs = patient(20_000)): Promise<Progress["value"]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await call(`/bulk/batches/${batchId}`, { as: "viewer", headers: JSON_ACCEPT });
    expect(res.status).toBe(200);
    const p = ((await res.json()) as Progress).value;
    if (p.complete && p.result !== "pending") return p;
    if (Date.now() > deadline) expect.fail(`batch ${batchId} did not finish: ${JSON.stringify(p)}`);
    await scheduler.wait(100);
  }
}

const batchRows = (batchId: string) =>
  env.DB.prepare(
    "SELECT id, action, target_class AS targetClass, target_name AS targetName, actor, role, reason, result, error, before, after FROM audit_log WHERE batch_id = ? ORDER BY time, rowid",
  )
    .bind(batchId)
    .all<{
      id: string;
      action: string;
      targetClass: string;
      targetName: string;
      actor: string;
      role: string;
      reason: string;
      result: string;
      error: string | null;
      before: string | null;
      after: string | null;
    }>()
    .then((r) => r.results);

describe("bulk force idle over foreign agents selected by incident reason", () => {
  it("previews the targets, then force-idles each through the Queue with one audit row per target and one for the batch", async () => {
    const reason = `bulk_reason_${uid()}`;
    const plain = `plain-${uid()}`;
    const work = `work-${uid()}`;
    const bare = `bare-${uid()}`;
    const other = `other-${uid()}`;
    // A plain agent with only the admin mixin, running a fiber that never ends by itself.
    const plainStub = await getAgentByName(env.PlainAdminAgent, plain);
    await plainStub.startHangingFiber({ step: 1 });
    await incident("PlainAdminAgent", plain, reason);
    // An agent with a Tasks run and a managed fiber.
    const workStub = await getAgentByName(env.DurableWorkAgent, work);
    const taskId = await workStub.startTask();
    const fiberId = await workStub.startManaged();
    await incident("DurableWorkAgent", work, reason);
    // An agent without the admin mixin: the console cannot act on it, and says so for that target alone.
    await incident("TelemetryOnlyAgent", bare, reason);
    // Same class, another reason: not selected.
    await incident("DurableWorkAgent", other, `other_${reason}`);

    // The preview: exactly the three agents with an incident of that reason, ordered by class and name, with why.
    const p = await preview(`incidentReason=${reason}`);
    expect(p.total).toBe(3);
    expect(p.capped).toBe(false);
    expect(p.targets.map((t) => [t.agentClass, t.agentName])).toEqual([
      ["DurableWorkAgent", work],
      ["PlainAdminAgent", plain],
      ["TelemetryOnlyAgent", bare],
    ]);
    // The facts of why it matched, and the console's words of them for the CLI.
    expect(p.targets[0]!.matched).toEqual({ agentClass: false, incidentReason: { reason, openOnly: false, count: 1, capped: false }, status: null });
    expect(p.targets[0]!.why).toBe(bulkMatchWords(p.targets[0]!));
    // Narrowed by class: one.
    expect((await preview(`incidentReason=${reason}&agentClass=PlainAdminAgent`)).targets.map((t) => t.agentName)).toEqual([plain]);
    // The preview changed nothing.
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM audit_log WHERE target_name IN (?, ?, ?)").bind(plain, work, bare).first("n")).toBe(0);

    // The page shows the count and, for an operator, the confirmation with a required reason.
    const page = await getText(`/bulk?incidentReason=${reason}`, "operator");
    expect(page.status).toBe(200);
    expect(mustTestId(page.text, "bulk-count").text).toBe("3");
    const confirm = mustTestId(page.text, "bulk-confirm").html;
    expect(findAll(confirm, "name", "reason")[0]?.attrs).toMatchObject({ required: "" });
    expect(findAll(confirm, "name", "expected")[0]?.attrs.value).toBe("3");
    const viewerPage = await getText(`/bulk?incidentReason=${reason}`, "viewer");
    expect(byTestId(viewerPage.text, "bulk-viewer")).toBeDefined();
    expect(byTestId(viewerPage.text, "bulk-confirm")).toBeUndefined();

    // Confirm (as the CLI does: JSON).
    const csrf = await csrfFor("operator");
    const res = await postForm(
      "/bulk",
      "operator",
      { incidentReason: reason, action: "force_idle", reason: "recovery loop after the model outage" },
      { csrf, headers: JSON_ACCEPT },
    );
    expect(res.status).toBe(202);
    const started = (await res.json()) as { ok: true; value: { batchId: string; href: string; total: number } };
    expect(started.value).toMatchObject({ total: 3, href: `/bulk/batches/${started.value.batchId}` });

    const done = await untilComplete(started.value.batchId);
    expect(done).toMatchObject({ total: 3, done: 2, failed: 1, running: 0, queued: 0, complete: true, result: "error" });
    const failure = done.targets.find((t) => t.agentName === bare)!;
    expect(failure.result).toBe("error");
    expect(failure.error?.split(":")[0]).toBe("unsupported");

    // The agents really are idle: each says so in its own audit row (what it answered after the action), and
    // the Tasks run and managed fiber no longer run.
    for (const name of [plain, work]) {
      const row = await env.DB.prepare("SELECT result, after FROM audit_log WHERE batch_id = ? AND target_name = ?")
        .bind(started.value.batchId, name)
        .first<{ result: string; after: string }>();
      expect(row!.result).toBe("ok");
      expect(JSON.parse(row!.after)).toMatchObject({ status: "idle", runCount: 0 });
    }
    expect(["cancelled", "aborted"]).toContain(await workStub.taskState(taskId));
    expect(await workStub.managedStatus(fiberId)).not.toBe("running");

    // One row for the batch plus one per target, all with the batch id; the batch row is completed with a summary.
    const rows = await batchRows(started.value.batchId);
    expect(rows).toHaveLength(4);
    const own = rows.find((r) => r.id === started.value.batchId)!;
    expect(own).toMatchObject({
      action: "bulk_force_idle",
      targetClass: "batch",
      targetName: `incidentReason=${reason}`,
      actor: "operator@example.com",
      role: "operator",
      reason: "recovery loop after the model outage",
      result: "error",
      error: "1 of 3 targets failed (see their rows in this batch)",
    });
    expect(JSON.parse(own.before!)).toEqual({
      filter: { incidentReason: reason },
      total: 3,
      capped: false,
      targets: [`DurableWorkAgent/${work}`, `PlainAdminAgent/${plain}`, `TelemetryOnlyAgent/${bare}`],
    });
    expect(JSON.parse(own.after!)).toEqual({ total: 3, done: 2, failed: 1, byResult: { ok: 2, error: 1 } });
    const perTarget = rows.filter((r) => r.id !== started.value.batchId);
    expect(perTarget.map((r) => [r.action, r.targetClass, r.targetName, r.reason, r.actor]).sort()).toEqual(
      [
        ["force_idle", "DurableWorkAgent", work, "recovery loop after the model outage", "operator@example.com"],
        ["force_idle", "PlainAdminAgent", plain, "recovery loop after the model outage", "operator@example.com"],
        ["force_idle", "TelemetryOnlyAgent", bare, "recovery loop after the model outage", "operator@example.com"],
      ].sort(),
    );
    // The audit log lists the batch's rows by its id (the batch page links there).
    const audit = await call(`/audit?batchId=${started.value.batchId}`, { as: "viewer", headers: JSON_ACCEPT });
    expect(((await audit.json()) as { items: { id: string }[] }).items.map((r) => r.id).sort()).toEqual(rows.map((r) => r.id).sort());
    // The other agent was never touched.
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM audit_log WHERE target_name = ?").bind(other).first("n")).toBe(0);

    // The progress page and its fragment: the bar, the counts, each failure's message, and no more polling.
    const progressPage = await getText(`/bulk/batches/${started.value.batchId}`, "viewer");
    expect(progressPage.status).toBe(200);
    expect(mustTestId(progressPage.text, "batch-bar").attrs).toMatchObject({ max: "3", value: "3" });
    expect(mustTestId(progressPage.text, "batch-done").text).toBe("2");
    expect(mustTestId(progressPage.text, "batch-failed").text).toBe("1");
    const failedRow = findAll(mustTestId(progressPage.text, "batch-targets").html, "data-agent", `TelemetryOnlyAgent/${bare}`)[0];
    expect(failedRow?.attrs["data-result"]).toBe("error");
    expect(failedRow?.text).toContain(failure.error);
    const fragment = await getText(`/bulk/batches/${started.value.batchId}/progress`, "viewer", { "HX-Request": "true" });
    expect(fragment.text.startsWith("<section")).toBe(true);
    const live = mustTestId(fragment.text, "batch-progress").attrs;
    expect(live["data-complete"]).toBe("true");
    expect(live["hx-trigger"]).toBeUndefined();

    await rejectionOf(plainStub.evict()).catch(() => undefined);
  });

  it("an HTML confirm redirects to the progress page, which polls every 2 s while targets are left", async () => {
    const reason = `bulk_html_${uid()}`;
    const name = `plain-${uid()}`;
    await incident("PlainAdminAgent", name, reason);
    const csrf = await csrfFor("operator");
    // The Worker's own fetch follows the 303 to the batch's page (the browser test sees the address change).
    const res = await postForm("/bulk", "operator", { incidentReason: reason, action: "trigger_alarm", reason: "run recovery now", _csrf: csrf });
    expect(res.status).toBe(200);
    const first = await res.text();
    const facts = mustTestId(first, "batch-facts").attrs;
    const batchId = facts["data-batch"]!;
    expect(batchId).toMatch(/^[0-9a-f-]{36}$/);
    expect(facts["data-action"]).toBe("trigger_alarm");
    // Right after the start the page is live (unless the target already finished); once finished it stops polling.
    const progress = mustTestId(first, "batch-progress").attrs;
    if (progress["data-complete"] === "false")
      expect(progress).toMatchObject({ "hx-get": `/bulk/batches/${batchId}/progress`, "hx-trigger": "every 2s, refresh" });
    const done = await untilComplete(batchId);
    expect(done).toMatchObject({ total: 1, done: 1, failed: 0, result: "ok" });
    expect((await batchRows(batchId)).map((r) => [r.action, r.result])).toEqual([
      ["bulk_trigger_alarm", "ok"],
      ["trigger_alarm", "ok"],
    ]);
  });
});

describe("bulk refusals", () => {
  it("refuses a viewer with a sentence and audits the refusal as a batch of its own", async () => {
    const reason = `bulk_viewer_${uid()}`;
    const name = `plain-${uid()}`;
    await incident("PlainAdminAgent", name, reason);
    const csrf = await csrfFor("viewer");
    const res = await postForm(
      "/bulk",
      "viewer",
      { incidentReason: reason, action: "force_idle", reason: "I am only a viewer" },
      { csrf, headers: JSON_ACCEPT },
    );
    expect(res.status).toBe(403);
    const body = (await res.json()) as { ok: false; error: { code: string; message: string } };
    expect(body).toMatchObject({ ok: false, error: { code: "not_permitted" } });
    // A sentence a person reads, naming who was refused.
    expect(body.error.message).toContain("viewer@example.com");
    const html = await postForm("/bulk", "viewer", { incidentReason: reason, action: "force_idle", reason: "again, from the page" }, { csrf });
    expect(html.status).toBe(403);
    const shown = mustTestId(await html.text(), "error-message");
    expect(shown.attrs["data-code"]).toBe("not_permitted");
    expect(shown.text).toBe(body.error.message);
    const rows = (
      await env.DB.prepare(
        "SELECT action, target_class, target_name, result, batch_id, id FROM audit_log WHERE actor = 'viewer@example.com' AND target_name = ? ORDER BY time, rowid",
      )
        .bind(`incidentReason=${reason}`)
        .all<Record<string, string>>()
    ).results;
    expect(rows.map((r) => [r.action, r.target_class, r.result])).toEqual([
      ["bulk_force_idle", "batch", "denied"],
      ["bulk_force_idle", "batch", "denied"],
    ]);
    expect(rows.every((r) => r.batch_id === r.id)).toBe(true);
    // Nothing was done to the agent.
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM audit_log WHERE target_name = ?").bind(name).first("n")).toBe(0);
  });

  it("answers a bad filter with 400 and a message, and an empty selection with no batch", async () => {
    const bad = await call("/bulk?status=asleep", { as: "viewer", headers: JSON_ACCEPT });
    expect(bad.status).toBe(400);
    // Each refusal: invalid_input, and a sentence that names the field it refuses.
    const refused = async (r: Response) => ((await r.json()) as { error: { code: string; message: string } }).error;
    const badStatus = await refused(bad);
    expect(badStatus.code).toBe("invalid_input");
    expect(badStatus.message).toContain("status");
    const none = await call("/bulk", { as: "viewer", headers: JSON_ACCEPT });
    expect(none.status).toBe(400);
    expect((await refused(none)).code).toBe("invalid_input");
    const badPage = await getText("/bulk?stuckRule=nope", "operator");
    expect(badPage.status).toBe(400);
    const shown = mustTestId(badPage.text, "error-message");
    expect(shown.attrs["data-code"]).toBe("invalid_input");
    expect(shown.text).toContain("stuckRule");

    const csrf = await csrfFor("operator");
    const missing = `nothing_has_this_reason_${uid()}`;
    const empty = await postForm("/bulk", "operator", { incidentReason: missing, action: "force_idle", reason: "cleanup" }, { csrf, headers: JSON_ACCEPT });
    expect(empty.status).toBe(400);
    const nothing = await refused(empty);
    expect(nothing.code).toBe("invalid_input");
    expect(nothing.message).toContain(missing);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM audit_log WHERE target_name = ?").bind(`incidentReason=${missing}`).first("n")).toBe(0);

    const noReason = await postForm("/bulk", "operator", { incidentReason: missing, action: "force_idle", reason: "  " }, { csrf, headers: JSON_ACCEPT });
    expect(noReason.status).toBe(400);
    const noReasonError = await refused(noReason);
    expect(noReasonError.code).toBe("invalid_input");
    expect(noReasonError.message).toContain("reason");
    const badAction = await postForm("/bulk", "operator", { incidentReason: missing, action: "resolve_op", reason: "x" }, { csrf, headers: JSON_ACCEPT });
    expect(badAction.status).toBe(400);
    const badActionError = await refused(badAction);
    expect(badActionError.code).toBe("invalid_input");
    expect(badActionError.message).toContain("action");
    // Without the CSRF token the app refuses before anything is read.
    const forged = await postForm("/bulk", "operator", { incidentReason: missing, action: "force_idle", reason: "x" }, { headers: JSON_ACCEPT });
    expect(forged.status).toBe(403);
  });
});

describe("bulk selection by status and class", () => {
  it("selects agents with open incidents, narrowed by class", async () => {
    const a = `open-${uid()}`;
    const b = `open-${uid()}`;
    await incident("PlainAdminAgent", a, "", "chat.recovery.detected");
    await incident("DurableWorkAgent", b, "", "chat.recovery.detected");
    const both = await preview("status=open_incidents&agentClass=PlainAdminAgent");
    expect(both.targets.map((t) => t.agentName)).toContain(a);
    expect(both.targets.map((t) => t.agentName)).not.toContain(b);
    const hit = both.targets.find((t) => t.agentName === a)!;
    expect(hit.matched).toEqual({ agentClass: true, incidentReason: null, status: { status: "open_incidents", count: 1, capped: false } });
    expect(hit.why).toBe(bulkMatchWords(hit));
    const byClass = await preview("agentClass=DurableWorkAgent");
    expect(byClass.targets.map((t) => t.agentName)).toContain(b);
    expect(byClass.targets.every((t) => t.agentClass === "DurableWorkAgent")).toBe(true);
  });
});
