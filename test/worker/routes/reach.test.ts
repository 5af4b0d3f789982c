import { env } from "cloudflare:workers";
import { Telemetry } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { batchHref, bulkForIncidentHref, incidentHref, LISTS, listHref } from "../../../console/links";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { bulkBatch, call, getText, uid } from "./harness";

// Reach: /bulk is in every page's navigation, an open incident links to a bulk action on its agents with the
// filter filled in, and the audit log's rows of a bulk action open that batch (never an agent page that is not one).

const JSON_ACCEPT = { Accept: "application/json" };
const amp = (s: string) => s.replace(/&/g, "&amp;");

beforeAll(async () => {
  await publishEnvTeamKeys();
});

/** An open chat-recovery incident (detected, not yet over) reported by an agent of `agentClass` through its telemetry. */
async function openIncident(agentClass: string, agentName: string) {
  const incidentId = `req-${uid()}:msg-1`;
  const t = new Telemetry({ source: { agentClass, agentName }, queue: env.TELEMETRY_QUEUE });
  t.record("chat.recovery.detected", { attempt: 1, maxAttempts: 3, recoveryKind: "retry" }, { incidentId, requestId: incidentId.split(":")[0]! });
  await t.settle();
  await pollRows("SELECT 1 FROM incidents WHERE incident_id = ? AND status = 'open'", [incidentId], (r) => r.length === 1);
  return incidentId;
}

describe("reach", () => {
  it("puts /bulk in every page's navigation", async () => {
    const page = await getText("/", "viewer");
    expect(page.text).toMatch(new RegExp(`<nav aria-label="Main">[\\s\\S]*href="${LISTS.bulk}"[\\s\\S]*</nav>`));
  });

  it("links an open incident to a bulk action on its agents, filter filled in, and the preview selects its agent", async () => {
    const agentClass = `ReachProbe${uid()}`;
    const agentName = `reach-${uid()}`;
    const id = await openIncident(agentClass, agentName);
    const page = await getText(incidentHref(id, { agentClass, agentName }), "viewer");
    expect(page.status).toBe(200);
    const link = bulkForIncidentHref({ agentClass, reason: null, open: true });
    expect(link).toBe(listHref("bulk", { agentClass, status: "open_incidents" }));
    expect(page.text).toContain(`data-testid="incident-bulk-link" href="${amp(link)}"`);
    const preview = (await (await call(link, { as: "viewer", headers: JSON_ACCEPT })).json()) as { value: { targets: { agentName: string }[] } };
    expect(preview.value.targets.map((t) => t.agentName)).toEqual([agentName]);
  });

  it("opens a bulk action's batch from its audit rows, and the batch page answers", async () => {
    const { batchId, agentName } = await bulkBatch("reach");
    await pollRows("SELECT 1 FROM audit_log WHERE batch_id = ? AND target_name = ?", [batchId, agentName], (r) => r.length >= 1);
    const audit = await getText(listHref("audit", { batchId }), "viewer");
    expect(audit.status).toBe(200);
    // The batch's own row and its target's row both lead to the batch.
    expect(audit.text).toContain(`href="${batchHref(batchId)}" data-testid="audit-batch-link"`);
    expect(audit.text.split(`href="${batchHref(batchId)}"`).length - 1).toBeGreaterThanOrEqual(2);
    expect(audit.text).not.toMatch(/href="\/agents\/batch\//);
    const batch = await call(batchHref(batchId), { as: "viewer" });
    expect(batch.status).toBe(200);
  });
});
