import { env } from "cloudflare:workers";
import { Telemetry } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { batchHref, bulkForIncidentHref, incidentHref, LISTS, listHref } from "../../../console/links";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { hrefs, mustTestId } from "../html";
import { bulkBatch, call, getOverview, getText, uid } from "./harness";

// Reach: /bulk is in every page's navigation, an open incident links to a bulk action on its agents with the
// filter filled in, and the audit log's rows of a bulk action open that batch (never an agent page that is not one).

const JSON_ACCEPT = { Accept: "application/json" };

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
    const page = await getOverview("viewer");
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
    expect(mustTestId(page.text, "incident-bulk-link").attrs.href).toBe(link);
    const preview = (await (await call(link, { as: "viewer", headers: JSON_ACCEPT })).json()) as { value: { targets: { agentName: string }[] } };
    expect(preview.value.targets.map((t) => t.agentName)).toEqual([agentName]);
  });

  it("opens a bulk action's batch from its audit rows, and the batch page answers", async () => {
    const { batchId, agentName } = await bulkBatch("reach");
    await pollRows("SELECT 1 FROM audit_log WHERE batch_id = ? AND target_name = ?", [batchId, agentName], (r) => r.length >= 1);
    const audit = await getText(listHref("audit", { batchId }), "viewer");
    expect(audit.status).toBe(200);
    // The batch's own row and its target's row both lead to the batch.
    expect(mustTestId(audit.text, "audit-batch-link").attrs.href).toBe(batchHref(batchId));
    expect(hrefs(audit.text).filter((h) => h === batchHref(batchId)).length).toBeGreaterThanOrEqual(2);
    expect(hrefs(audit.text).filter((h) => h.startsWith("/agents/batch/"))).toEqual([]);
    const batch = await call(batchHref(batchId), { as: "viewer" });
    expect(batch.status).toBe(200);
  });
});
