import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { consoleAdminClient } from "../../worker/admin-client";
import { pollRows } from "../helpers";
import { ambiguousCharge, auditOf, registerAgent, uid } from "../worker/routes/harness";

// Resolving an ambiguous op through admin RPC: the agent's own ledger records it (a foreign fixture agent and
// the demo's SessionAgent), the attempt is audited with before/after, and the projection shows the resolution
// once the op.resolved event went through the real Queue and ingest.

const operator = { email: "oncall@example.com", role: "operator" as const };
const viewer = { email: "watcher@example.com", role: "viewer" as const };

type OpProjection = { resolution: string | null; resolution_ref: string | null; idempotent: number | null; resolution_at: number | null };
const projection = (opId: string, agentName: string, check: (r: OpProjection[]) => boolean) =>
  pollRows<OpProjection>(
    "SELECT resolution, resolution_ref, idempotent, resolution_at FROM op_ambiguities WHERE op_id = ? AND agent_name = ?",
    [opId, agentName],
    check,
  );

/** A LedgerAgent (foreign: its own ledger, our telemetry and admin mixins) with one call whose outcome is unknown. */
async function foreignAmbiguous(idempotent: boolean) {
  const name = `ledger-${uid()}`;
  const opId = `op-${uid()}`;
  const stub = await getAgentByName(env.LedgerAgent, name);
  await stub.lostCall(opId, "payments.refund", idempotent);
  await projection(opId, name, (r) => r.length === 1 && r[0]!.resolution_at === null);
  return { name, opId, stub, target: { agentClass: "LedgerAgent", agentName: name } };
}

describe("resolve an ambiguous op on a foreign agent", () => {
  it("records 'it ran' with its result reference: ledger, audit (before/after) and projection", async () => {
    const f = await foreignAmbiguous(false);
    expect((await projection(f.opId, f.name, (r) => r.length === 1))[0]!.idempotent).toBe(0);
    const admin = consoleAdminClient(env, operator);

    const missingRef = await admin.resolveOp(f.target, { opId: f.opId, resolution: "verified_ran", reason: "provider shows the refund" });
    expect(missingRef).toEqual({ ok: false, error: { code: "invalid_input", message: expect.stringContaining("resultRef: say where the result is") } });

    const r = await admin.resolveOp(f.target, { opId: f.opId, resolution: "verified_ran", resultRef: "re_3PqX", reason: "provider shows the refund" });
    expect(r).toEqual({
      ok: true,
      value: {
        opId: f.opId,
        resolution: "verified_ran",
        recorded: "verified_ran",
        resultRef: "re_3PqX",
        noop: false,
        before: { opId: f.opId, kind: "payments.refund", status: "unknown", idempotent: false, resolution: null, resultRef: null },
        after: { opId: f.opId, kind: "payments.refund", status: "settled", idempotent: false, resolution: "verified_ran", resultRef: "re_3PqX" },
      },
    });
    expect(await f.stub.entry(f.opId)).toMatchObject({ state: "settled", resolution: "verified_ran", result_ref: "re_3PqX" });

    const audit = await env.DB.prepare("SELECT action, result, reason, before, after FROM audit_log WHERE target_name = ? ORDER BY time, rowid")
      .bind(f.name)
      .all<Record<string, string>>();
    expect(audit.results.map((a) => [a.action, a.result, a.reason])).toEqual([
      ["resolve_op", "invalid", "provider shows the refund"],
      ["resolve_op", "ok", "provider shows the refund"],
    ]);
    expect(JSON.parse(audit.results[1]!.before!)).toMatchObject({ status: "unknown" });
    expect(JSON.parse(audit.results[1]!.after!)).toMatchObject({ status: "settled", resolution: "verified_ran" });

    const [row] = await projection(f.opId, f.name, (rows) => rows[0]?.resolution === "verified_ran");
    expect(row).toMatchObject({ resolution: "verified_ran", resolution_ref: "re_3PqX" });
    // The same op is no longer ambiguous: a second resolution is refused in words.
    const again = await admin.resolveOp(f.target, { opId: f.opId, resolution: "verified_not_ran", reason: "second thoughts" });
    expect(again).toEqual({
      ok: false,
      error: {
        code: "invalid_input",
        message: `op "${f.opId}" is not ambiguous`,
        facts: { kind: "op_not_ambiguous", opId: f.opId, status: "settled", resolution: "verified_ran" },
      },
    });
  });

  it("re-runs an idempotent op once, with its key, and records it reissued", async () => {
    const f = await foreignAmbiguous(true);
    const r = await consoleAdminClient(env, operator).resolveOp(f.target, { opId: f.opId, resolution: "rerun", reason: "safe to repeat: keyed upstream" });
    expect(r).toMatchObject({
      ok: true,
      value: { resolution: "rerun", recorded: "reissued", resultRef: `upstream/${f.opId}`, after: { status: "settled", resolution: "reissued" } },
    });
    expect(await f.stub.upstreamCalls(f.opId)).toBe(1);
    await projection(f.opId, f.name, (rows) => rows[0]?.resolution === "reissued" && rows[0]?.resolution_ref === `upstream/${f.opId}`);
  });

  it("refuses a re-run of a non-idempotent op, an unknown op, and a viewer; every attempt audited", async () => {
    const f = await foreignAmbiguous(false);
    const admin = consoleAdminClient(env, operator);
    expect(await admin.resolveOp(f.target, { opId: f.opId, resolution: "rerun", reason: "try again" })).toEqual({
      ok: false,
      error: { code: "not_permitted", message: "payments.refund has no idempotency key upstream: a re-run could charge twice" },
    });
    expect(await f.stub.upstreamCalls(f.opId)).toBe(0);
    expect(await admin.resolveOp(f.target, { opId: "op-nobody", resolution: "verified_not_ran", reason: "typo" })).toEqual({
      ok: false,
      error: { code: "not_found", message: `no op "op-nobody" in the ledger`, facts: { kind: "no_op", opId: "op-nobody" } },
    });
    const denied = await consoleAdminClient(env, viewer).resolveOp(f.target, { opId: f.opId, resolution: "verified_not_ran", reason: "I am only watching" });
    expect(denied).toEqual({
      ok: false,
      error: {
        code: "not_permitted",
        message: "refused: watcher@example.com has the viewer role; this action needs operator",
        facts: { kind: "role", email: "watcher@example.com", role: "viewer", needs: "operator" },
      },
    });
    expect(await f.stub.entry(f.opId)).toMatchObject({ state: "unknown", resolution: null });
    expect((await auditOf(f.name)).map((a) => [a.actor, a.action, a.result])).toEqual([
      ["oncall@example.com", "resolve_op", "error"],
      ["oncall@example.com", "resolve_op", "error"],
      ["watcher@example.com", "resolve_op", "denied"],
    ]);
    // Nothing was resolved: the projection still shows it open.
    expect((await projection(f.opId, f.name, (r) => r.length === 1))[0]!.resolution_at).toBeNull();
  });
});

describe("an agent that cannot resolve ops", () => {
  it("says so: a mixin without onAdminResolveOp answers unsupported, and its capabilities say resolveOps false", async () => {
    const name = `plain-${uid()}`;
    await registerAgent("PlainAdminAgent", name);
    const admin = consoleAdminClient(env, operator);
    const target = { agentClass: "PlainAdminAgent", agentName: name };
    const status = await admin.status(target);
    expect(status).toMatchObject({ ok: true, value: { capabilities: { contract: 11, resolveOps: false } } });
    expect(await admin.resolveOp(target, { opId: "op-1", resolution: "verified_not_ran", reason: "checked" })).toEqual({
      ok: false,
      error: {
        code: "unsupported",
        message: "PlainAdminAgent does not implement onAdminResolveOp",
        facts: { kind: "no_resolve_hook", agentClass: "PlainAdminAgent" },
      },
    });
    expect((await auditOf(name)).map((a) => [a.action, a.result])).toEqual([["resolve_op", "error"]]);
  });
});

describe("resolve an ambiguous charge on the demo's SessionAgent", () => {
  it("records 'did not run' in the session's op ledger and the projection; a re-run of the charge is refused", async () => {
    const s = await ambiguousCharge("resolve");
    const admin = consoleAdminClient(env, operator);
    const target = { agentClass: s.agentClass, agentName: s.name };
    expect(await admin.status(target)).toMatchObject({ ok: true, value: { capabilities: { resolveOps: true } } });
    expect(await admin.resolveOp(target, { opId: s.opId, resolution: "rerun", reason: "just charge again" })).toEqual({
      ok: false,
      error: {
        code: "not_permitted",
        message: "tool.charge_card is not idempotent: re-running it could do it twice. Check upstream, then record whether it ran.",
      },
    });
    const r = await admin.resolveOp(target, { opId: s.opId, resolution: "verified_not_ran", reason: "no charge with this key at the provider" });
    expect(r).toMatchObject({
      ok: true,
      value: {
        recorded: "verified_not_ran",
        resultRef: null,
        before: { status: "ambiguous", kind: "tool.charge_card", idempotent: false },
        after: { status: "resolved", resolution: "verified_not_ran" },
      },
    });
    expect((await s.stub.ops()).find((o) => o.op_id === s.opId)?.status).toBe("resolved");
    const [row] = await projection(s.opId, s.name, (rows) => rows[0]?.resolution === "verified_not_ran");
    expect(row!.resolution_at).not.toBeNull();
    // The session's own telemetry reported it too, with the operator's reason.
    const events = await pollRows<{ payload: string }>(
      "SELECT payload FROM events WHERE agent_name = ? AND op_id = ? AND type = 'op.resolved'",
      [s.name, s.opId],
      (e) => e.length >= 1,
    );
    expect(events.some((e) => JSON.parse(e.payload).reason === "no charge with this key at the provider")).toBe(true);
  });
});
