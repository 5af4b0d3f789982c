import { type AdminResult, describeInput, fail, ok, RECORDED_RESOLUTION, type ResolveOpInput, type ResolveOpOutput, resolveOpHookResult } from "./contract.js";

/**
 * Worker side of resolving an ambiguous op (contract 7): the agent answers what its `onAdminResolveOp` hook answered,
 * and this checks it against the contract and turns it into the action's answer. Anything but `recorded` / `rerun` is
 * a typed error: `not_found` (no such op), `invalid_input` (not ambiguous; its state says why), `not_permitted`
 * (refused, with the agent's own sentence). The statements of facts-only refusals are the client's (client.ts).
 */
export function resolveOpOf({ opId, resolution, resultRef }: ResolveOpInput, answer: unknown): AdminResult<ResolveOpOutput> {
  const r = resolveOpHookResult.safeParse(answer);
  if (!r.success) return fail("unavailable", "", { kind: "hook_bad_answer", detail: describeInput(r.error) });
  const v = r.data;
  switch (v.outcome) {
    case "not_found":
      return fail("not_found", "", { kind: "no_op", opId });
    case "not_ambiguous":
      return fail("invalid_input", "", { kind: "op_not_ambiguous", opId, status: v.state.status, resolution: v.state.resolution ?? null });
    case "refused":
      return fail("not_permitted", v.message);
    case "recorded":
    case "rerun":
      return ok({
        opId,
        resolution,
        recorded: RECORDED_RESOLUTION[resolution],
        before: v.before,
        after: v.after,
        resultRef: v.outcome === "rerun" ? v.resultRef : resolution === "verified_ran" ? (resultRef ?? v.after.resultRef) : null,
        noop: false,
      });
  }
}
