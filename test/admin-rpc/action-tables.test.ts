import { beforeAll, describe, expect, it } from "vitest";
import { doneOf, formOf, plainDone } from "../../console/action-words";
import {
  ADMIN_ACTION_NAMES,
  ADMIN_ACTIONS,
  type AdminActionEntry,
  type AdminActionRpc,
  AGENT_ACTION_NAMES,
  BULK_ACTION_NAMES,
  mayTake,
} from "../../src/admin-rpc/actions";
import type { AdminRpc } from "../../src/admin-rpc/contract";
import { AUDIT_ACTIONS } from "../../src/store/read-models";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { call, getText } from "../worker/routes/harness";

// ADMIN_ACTIONS is the one definition of the admin actions: what differs per action is a field of its entry
// (AdminActionEntry), and the mixin's RPC surface (AdminRpc) derives from it. These lines are typechecked (npm run
// typecheck): each expected error below proves an entry or the mixin refuses to be incomplete, so an action added to
// ADMIN_ACTIONS without its verdict, events, form words or agent-side handler fails the typecheck.
{
  const { verify: _v, ...withoutVerdict } = ADMIN_ACTIONS.trigger_alarm;
  // @ts-expect-error an entry without its verdict is not an entry
  const noVerdict: AdminActionEntry = withoutVerdict;
  const { emit: _e, ...withoutEvents } = ADMIN_ACTIONS.resume_recovery;
  // @ts-expect-error an entry without its events is not an entry
  const noEvents: AdminActionEntry = withoutEvents;
  const { confirm: _c, ...withoutForm } = ADMIN_ACTIONS.force_idle;
  // @ts-expect-error an action on a whole agent states its form's words
  const noForm: AdminActionEntry = withoutForm;
  // @ts-expect-error an action on one op is never taken in bulk
  const opInBulk: AdminActionEntry = { ...ADMIN_ACTIONS.resolve_op, bulk: true };
  // A mixin that lacks an action's method (here pause recovery's) is not the admin RPC surface:
  const { adminPauseRecovery: _p, ...withoutHandler } = {} as AdminRpc;
  // @ts-expect-error AdminRpc requires every action's method, as its entry's `rpc` names it
  const noHandler: AdminRpc = withoutHandler;
  // @ts-expect-error and types it by the entry's output: force idle's answer is not trigger alarm's
  const wrongAnswer: AdminActionRpc["adminTriggerAlarm"] = {} as AdminActionRpc["adminForceIdle"];
  void [noVerdict, noEvents, noForm, opInBulk, noHandler, wrongAnswer];
}

describe("ADMIN_ACTIONS drives every per-action fact", () => {
  it("each entry names its verdict, its events and its agent-side method; no two share a slug or a method", () => {
    for (const a of ADMIN_ACTION_NAMES) {
      const e: AdminActionEntry = ADMIN_ACTIONS[a];
      expect(typeof e.verify, a).toBe("function");
      expect(typeof e.emit, a).toBe("function");
      expect(e.rpc, a).toMatch(/^admin[A-Z]\w+$/);
    }
    expect(new Set(ADMIN_ACTION_NAMES.map((a) => ADMIN_ACTIONS[a].slug)).size).toBe(ADMIN_ACTION_NAMES.length);
    expect(new Set(ADMIN_ACTION_NAMES.map((a) => ADMIN_ACTIONS[a].rpc)).size).toBe(ADMIN_ACTION_NAMES.length);
  });

  it("every action on a whole agent has a form that asks for a reason with its words, and refines them by what the agent reports", () => {
    for (const a of AGENT_ACTION_NAMES) {
      const form = formOf(a, null);
      expect(form).toEqual(ADMIN_ACTIONS[a].confirm);
      expect(form.help.length, a).toBeGreaterThan(0);
      expect(form.placeholder, a).toMatch(/^e\.g\. /);
    }
    const caps = {
      contract: 9,
      forceIdleHook: false,
      derivedStatus: false,
      tasks: true,
      managedFibers: false,
      chatRecovery: false,
      plainFiberStop: "none" as const,
      resolveOps: false,
      pauseRecovery: false,
    };
    expect(formOf("force_idle", caps).help).toMatch(
      /^Cancels its Tasks runs, removes its run rows so nothing is recovered\. A runFiber callback that nothing else stops keeps running/,
    );
    expect(formOf("pause_recovery", caps).help).toMatch(/older than the recovery pause: upgrade @agent-oncall\/admin-rpc/);
    expect(formOf("pause_recovery", { ...caps, pauseRecovery: true }).help).toBe(ADMIN_ACTIONS.pause_recovery.confirm.help);
  });

  it("an action the console has no words for is answered plainly from its answer and verdict; the others in their own words", () => {
    expect(plainDone("Ping", { noop: true })).toEqual({ clean: true, title: "Ping done.", detail: "Nothing changed. Recorded as a no-op." });
    expect(plainDone("Ping", { noop: false, result: "partial" })).toMatchObject({ clean: false, title: "Ping done, but not all of it took effect." });
    expect(plainDone("Ping", { noop: false })).toMatchObject({ clean: true, title: "Ping done." });
    const resumed = { noop: false, before: {}, after: { pause: null, pendingRecovery: 0 }, alarm: "ran", recovered: ["f1"] };
    expect(doneOf("resume_recovery", "Resume recovery", resumed)).toEqual({
      clean: true,
      title: "Resume recovery done.",
      detail: "Recovered 1 fiber(s); 0 still wait.",
    });
  });

  it("every action states its slug, label, role and whether bulk may take it; bulk takes only actions on a whole agent", () => {
    for (const a of ADMIN_ACTION_NAMES) {
      expect(ADMIN_ACTIONS[a]).toMatchObject({
        slug: expect.stringMatching(/^[a-z-]+$/),
        label: expect.any(String),
        role: expect.stringMatching(/^(viewer|operator)$/),
        bulk: expect.any(Boolean),
      });
    }
    expect(BULK_ACTION_NAMES.every((a) => ADMIN_ACTIONS[a].scope === "agent")).toBe(true);
    expect(BULK_ACTION_NAMES).toEqual(ADMIN_ACTION_NAMES.filter((a) => ADMIN_ACTIONS[a].bulk));
  });

  it("authorization follows each action's role", () => {
    for (const a of ADMIN_ACTION_NAMES) {
      expect(mayTake("operator", a)).toBe(true);
      expect(mayTake("viewer", a)).toBe((ADMIN_ACTIONS[a].role as string) === "viewer");
    }
  });

  it("the audit log's actions are every admin action and a bulk row for each bulk action", () => {
    expect([...AUDIT_ACTIONS].sort()).toEqual([...ADMIN_ACTION_NAMES, ...BULK_ACTION_NAMES.map((a) => `bulk_${a}`)].sort());
  });
});

describe("the audit filter", () => {
  beforeAll(async () => {
    await publishEnvTeamKeys();
  });

  it("offers every action the audit log records, and filters by each", async () => {
    const page = await getText("/audit", "viewer");
    const select = /<select name="action">([\s\S]*?)<\/select>/.exec(page.text)?.[1] ?? "";
    const offered = [...select.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1]).filter(Boolean);
    expect(offered.sort()).toEqual([...AUDIT_ACTIONS].sort());
    for (const a of AUDIT_ACTIONS) expect((await call(`/audit?action=${a}`, { as: "viewer", headers: { Accept: "application/json" } })).status).toBe(200);
    expect((await call("/audit?action=reboot", { as: "viewer", headers: { Accept: "application/json" } })).status).toBe(400);
  });
});
