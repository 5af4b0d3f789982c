import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { consoleAdminClient } from "../../worker/admin-client";

/**
 * adminRecoveryBudget on foreign agents in the main pool: a plain Agent with the mixin keeps no chat-recovery
 * budget (the SDK bounds only chat recovery) and says so; an agent without the mixin is refused as unsupported.
 * The chat agents' budgets are compared with the SDK's own records in the chat suite (test/chat/budget.test.ts).
 */

const viewer = { email: "viewer@example.com", role: "viewer" as const };
const uid = () => crypto.randomUUID().slice(0, 8);

describe("adminRecoveryBudget", () => {
  it("a plain Agent answers no bounds and no records", async () => {
    const r = await consoleAdminClient(env, viewer, { allowUnregistered: true }).recoveryBudget({
      agentClass: "PlainAdminAgent",
      agentName: `budget-${uid()}`,
    });
    expect(r).toMatchObject({ ok: true, value: { config: null, records: [] } });
  });

  it("an agent without the admin mixin is refused as unsupported, and bad input is refused before any call", async () => {
    const admin = consoleAdminClient(env, viewer, { allowUnregistered: true });
    const r = await admin.recoveryBudget({ agentClass: "TelemetryOnlyAgent", agentName: `budget-${uid()}` });
    expect(r).toMatchObject({ ok: false, error: { code: "unsupported" } });
    expect(await admin.recoveryBudget({ agentClass: "PlainAdminAgent", agentName: "x" }, { incidentId: "" })).toMatchObject({
      ok: false,
      error: { code: "invalid_input" },
    });
  });
});
