import { beforeAll, describe, expect, it } from "vitest";
import { DONE } from "../../console/action-words";
import { ADMIN_ACTION_NAMES, ADMIN_ACTIONS, type AdminActionName, BULK_ACTION_NAMES, mayTake } from "../../src/admin-rpc/actions";
import { EMIT, VERIFY } from "../../src/admin-rpc/client";
import { AUDIT_ACTIONS } from "../../src/store/read-models";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { call, getText } from "../worker/routes/harness";

// ADMIN_ACTIONS is the one definition of the admin actions; what differs per action beyond its fields lives in
// exhaustive Records keyed by AdminActionName. These lines are typechecked (npm run typecheck): each expected
// error below proves a table refuses to be incomplete, so an action added to ADMIN_ACTIONS and not wired into
// one of them fails the typecheck instead of falling through to another action's branch.
{
  const { resolve_op: _v, ...verifyWithoutOne } = VERIFY;
  // @ts-expect-error a VERIFY table without resolve_op is not a VERIFY table
  const verify: typeof VERIFY = verifyWithoutOne;
  const { trigger_alarm: _e, ...emitWithoutOne } = EMIT;
  // @ts-expect-error an EMIT table without trigger_alarm is not an EMIT table
  const emit: typeof EMIT = emitWithoutOne;
  const { force_idle: _d, ...doneWithoutOne } = DONE;
  // @ts-expect-error a DONE table without force_idle is not a DONE table
  const done: typeof DONE = doneWithoutOne;
  // A new action (here "drain_queue") would be missing from each table as it is today:
  // @ts-expect-error VERIFY has no entry for a new action
  const verifyNew: Record<AdminActionName | "drain_queue", unknown> = VERIFY;
  // @ts-expect-error EMIT has no entry for a new action
  const emitNew: Record<AdminActionName | "drain_queue", unknown> = EMIT;
  // @ts-expect-error DONE has no entry for a new action
  const doneNew: Record<AdminActionName | "drain_queue", unknown> = DONE;
  void [verify, emit, done, verifyNew, emitNew, doneNew];
}

describe("ADMIN_ACTIONS drives every per-action table", () => {
  it("each table has exactly one entry per action", () => {
    const names = [...ADMIN_ACTION_NAMES].sort();
    for (const table of [VERIFY, EMIT, DONE]) expect(Object.keys(table).sort()).toEqual(names);
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
