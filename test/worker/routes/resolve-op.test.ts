import { env } from "cloudflare:workers";
import { Telemetry } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { AGENT_ACTION_NAMES } from "../../../src/admin-rpc/actions";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, findAll, mustTestId } from "../html";
import { ambiguousCharge, auditOf, csrfFor, exhaustedChatIncident, getText, postForm, registerAgent, uid } from "./harness";

// The resolve-op route and the pages that offer it, on the real Worker: the form's own fields reach the
// agent, refusals are 4xx with a sentence, and /ops, the session page and the incident page show the control.

const JSON_ACCEPT = { Accept: "application/json" };
let operatorCsrf: string;
let viewerCsrf: string;

beforeAll(async () => {
  await publishEnvTeamKeys();
  [operatorCsrf, viewerCsrf] = await Promise.all([csrfFor("operator"), csrfFor("viewer")]);
});

async function foreignAmbiguous(idempotent: boolean) {
  const name = `ledger-${uid()}`;
  const opId = `op-${uid()}`;
  const stub = await getAgentByName(env.LedgerAgent, name);
  await stub.lostCall(opId, "payments.refund", idempotent);
  await pollRows("SELECT 1 FROM op_ambiguities WHERE op_id = ? AND agent_name = ?", [opId, name], (r) => r.length === 1);
  return { name, opId, stub };
}

describe("POST /actions/resolve-op", () => {
  it("resolves from the htmx form, reading only the action's own fields, and says what happened", async () => {
    const f = await foreignAmbiguous(false);
    const res = await postForm(
      "/actions/resolve-op",
      "operator",
      {
        agentClass: "LedgerAgent",
        agentName: f.name,
        opId: f.opId,
        resolution: "verified_not_ran",
        resultRef: "",
        reason: "no refund at the provider",
        _csrf: "ignored",
        extra: "x",
      },
      { csrf: operatorCsrf, headers: { "HX-Request": "true" } },
    );
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).toContain(
      `Resolve op done.</strong> Op ${f.opId} (payments.refund) is recorded as resolved: it did not run. The agent&#39;s ledger says unknown → settled.`,
    );
    await pollRows(
      "SELECT 1 FROM op_ambiguities WHERE op_id = ? AND agent_name = ? AND resolution = 'verified_not_ran'",
      [f.opId, f.name],
      (r) => r.length === 1,
    );
  });

  it("answers every refusal with a 4xx and a sentence, never a 5xx", async () => {
    const f = await foreignAmbiguous(false);
    const post = (who: "viewer" | "operator", form: Record<string, string>) =>
      postForm(
        "/actions/resolve-op",
        who,
        { agentClass: "LedgerAgent", agentName: f.name, ...form },
        { csrf: who === "viewer" ? viewerCsrf : operatorCsrf, headers: JSON_ACCEPT },
      );
    const cases: [Response, number, string][] = [
      [await post("operator", { opId: f.opId, resolution: "verified_ran", reason: "it ran" }), 400, "resultRef: say where the result is"],
      [
        await post("operator", { opId: f.opId, resolution: "maybe", reason: "?" }),
        400,
        "resolution must be verified_ran (it ran), verified_not_ran (it did not run) or rerun (re-run it now)",
      ],
      [await post("operator", { opId: f.opId, resolution: "verified_not_ran" }), 400, "a reason is required"],
      [await post("operator", { opId: "op-nope", resolution: "verified_not_ran", reason: "typo" }), 404, `the agent's ledger has no op "op-nope"`],
      [await post("operator", { opId: f.opId, resolution: "rerun", reason: "again" }), 403, "has no idempotency key upstream"],
      [
        await post("viewer", { opId: f.opId, resolution: "verified_not_ran", reason: "watching" }),
        403,
        "viewer@example.com has the viewer role; this action needs operator",
      ],
    ];
    for (const [res, status, message] of cases) {
      expect(res.status).toBe(status);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(message);
    }
    expect((await auditOf(f.name)).map((a) => a.result)).toEqual(["invalid", "invalid", "invalid", "error", "error", "denied"]);
    expect(await f.stub.entry(f.opId)).toMatchObject({ state: "unknown" });
  });

  it("refuses an agent without onAdminResolveOp with 422 unsupported", async () => {
    const name = `plain-${uid()}`;
    await registerAgent("PlainAdminAgent", name);
    const res = await postForm(
      "/actions/resolve-op",
      "operator",
      { agentClass: "PlainAdminAgent", agentName: name, opId: "op-1", resolution: "verified_not_ran", reason: "checked" },
      {
        csrf: operatorCsrf,
        headers: JSON_ACCEPT,
      },
    );
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({
      ok: false,
      error: { code: "unsupported", message: expect.stringContaining("PlainAdminAgent does not implement onAdminResolveOp") },
    });
  });
});

describe("the pages that offer it", () => {
  it("/ops lists open ops first with the control for operators, and the reason why not for viewers", async () => {
    const open = await foreignAmbiguous(true);
    const settled = await foreignAmbiguous(false);
    await postForm(
      "/actions/resolve-op",
      "operator",
      { agentClass: "LedgerAgent", agentName: settled.name, opId: settled.opId, resolution: "verified_ran", resultRef: "re_9", reason: "ran" },
      { csrf: operatorCsrf },
    );
    await pollRows(
      "SELECT 1 FROM op_ambiguities WHERE op_id = ? AND agent_name = ? AND resolution IS NOT NULL",
      [settled.opId, settled.name],
      (r) => r.length === 1,
    );

    const op = await getText("/ops", "operator");
    expect(op.status).toBe(200);
    const openTable = op.text.slice(op.text.indexOf('data-testid="ops"'), op.text.indexOf('data-testid="ops-resolved"'));
    expect(openTable).toContain(open.opId);
    expect(openTable).not.toContain(settled.opId);
    expect(op.text.slice(op.text.indexOf('data-testid="ops-resolved"'))).toContain("re_9");
    const control = findAll(openTable, "data-op-id", open.opId).find((f) => f.attrs["data-testid"] === "resolve-op");
    expect(control).toBeDefined();
    // Re-run is offered for the idempotent op.
    expect(findAll(control!.html, "value", "rerun")).toHaveLength(1);

    const viewer = await getText("/ops", "viewer");
    expect(byTestId(viewer.text, "resolve-viewer")).toBeDefined();
    expect(findAll(viewer.text, "hx-post", "/actions/resolve-op")).toEqual([]);
  });

  it("the session page and the incident page show the session's ambiguous charge with the control, and the incident page the agent's actions and links", async () => {
    const s = await ambiguousCharge("pages");
    const session = await getText(`/sessions/${encodeURIComponent(s.name)}?agentClass=FaultySessionAgent&agentName=${encodeURIComponent(s.name)}`, "operator");
    expect(session.status).toBe(200);
    const ops = session.text.slice(session.text.indexOf('data-testid="session-ops"'));
    expect(ops).toContain(s.opId);
    expect(findAll(ops, "hx-post", "/actions/resolve-op")).toHaveLength(1);
    // The charge is not idempotent: no re-run, and the page says why.
    expect(findAll(ops, "value", "rerun")).toEqual([]);
    expect(mustTestId(ops, "rerun-withheld").attrs["data-idempotent"]).toBe("false");

    const [incident] = await pollRows<{ incident_id: string }>("SELECT incident_id FROM incidents WHERE agent_name = ?", [s.name], (r) => r.length >= 1);
    const page = await getText(`/incidents/${encodeURIComponent(incident!.incident_id)}`, "operator");
    expect(page.status).toBe(200);
    expect(findAll(page.text, "id", "action-form-force-idle")).toHaveLength(1);
    expect(findAll(page.text, "id", "action-form-trigger-alarm")).toHaveLength(1);
    const links = page.text.slice(page.text.indexOf('data-testid="incident-links"'));
    expect(mustTestId(links, "incident-session-link").attrs.href).toBe(
      `/sessions/${encodeURIComponent(s.name)}?agentClass=FaultySessionAgent&agentName=${encodeURIComponent(s.name)}`,
    );
    // The count is the agent's open ops, and it links to exactly that list.
    const opsLink = mustTestId(links, "incident-ops-link").attrs;
    expect(opsLink["data-open"]).toBe("1");
    expect(opsLink["data-more"]).toBe("false");
    const listed = await getText(opsLink.href!.replace(/&amp;/g, "&"), "operator");
    expect(new Set(findAll(listed.text, "data-op-id").map((e) => e.attrs["data-op-id"]))).toEqual(new Set([s.opId]));
    expect(page.text.slice(page.text.indexOf('data-testid="incident-ops"'))).toContain(s.opId);

    const asViewer = await getText(`/incidents/${encodeURIComponent(incident!.incident_id)}`, "viewer");
    // A viewer is offered none of the agent's actions, and told so.
    expect(mustTestId(asViewer.text, "actions-withheld").attrs["data-actions"]).toBe(AGENT_ACTION_NAMES.join(" "));
    expect(byTestId(asViewer.text, "resolve-viewer")).toBeDefined();
  });

  it("on an agent whose mixin has no onAdminResolveOp, the incident page offers its actions but says why its ops cannot be resolved", async () => {
    const { agentName, incidentId } = await exhaustedChatIncident();
    const opId = `op-${uid()}`;
    const t = new Telemetry({ source: { agentClass: "ProbeAgent", agentName }, queue: env.TELEMETRY_QUEUE });
    t.record("op.ambiguous", { opKind: "tool.send_invoice", idempotent: false, detail: "evicted mid-call" }, { opId });
    await t.settle();
    await pollRows("SELECT 1 FROM op_ambiguities WHERE op_id = ? AND agent_name = ?", [opId, agentName], (r) => r.length === 1);
    const page = await getText(`/incidents/${encodeURIComponent(incidentId)}`, "operator");
    expect(page.status).toBe(200);
    expect(findAll(page.text, "id", "action-form-force-idle")).toHaveLength(1);
    const ops = page.text.slice(page.text.indexOf('data-testid="incident-ops"'));
    expect(ops).toContain(opId);
    // Read-only, with the reason (it names the hook the agent lacks).
    expect(mustTestId(ops, "resolve-read-only").text).toContain("onAdminResolveOp");
    expect(findAll(ops, "hx-post", "/actions/resolve-op")).toEqual([]);
  });
});
