import { describe, expect, it } from "vitest";
import { inputWords } from "../../src/admin-rpc/input-words";
import { actionInput, describeInput, findRunsInput, pauseRecoveryInput, resolveOpInput, runIdInput } from "../../src/admin-rpc/inputs";

/** What an operator reads for a refused input: the client's parse, with the Worker side's words. */
function refusal(schema: { safeParse(v: unknown, p: { error: typeof inputWords }): { success: boolean; error?: unknown } }, input: unknown) {
  const r = schema.safeParse(input, { error: inputWords });
  expect(r.success).toBe(false);
  return describeInput(r.error as Parameters<typeof describeInput>[0]);
}

describe("the operator's words for a refused admin input (input-words.ts)", () => {
  it("words a missing, blank or long reason", () => {
    expect(refusal(actionInput, {})).toBe("reason: a reason is required");
    expect(refusal(actionInput, { reason: "   " })).toBe("reason: a reason is required: say why, for the audit log");
    expect(refusal(actionInput, { reason: "x".repeat(2001) })).toBe("reason: the reason is too long (2000 characters at most)");
  });

  it("words run ids and which runs to find", () => {
    expect(refusal(runIdInput, { id: "" })).toBe("id: a run id is required");
    expect(refusal(findRunsInput, {})).toBe("say which runs: ids, recent, or both");
    expect(refusal(findRunsInput, { ids: Array.from({ length: 101 }, (_, i) => `r${i}`) })).toBe("ids: at most 100 ids per call");
    expect(refusal(findRunsInput, { ids: ["a", " "] })).toBe("ids.1: a run id is required");
    expect(refusal(findRunsInput, { recent: 101 })).toBe("recent: at most the 100 most recent runs of each kind");
  });

  it("words a pause's hours", () => {
    expect(refusal(pauseRecoveryInput, { reason: "r", hours: "soon" })).toBe("hours: hours must be a number of hours, at most 168");
    expect(refusal(pauseRecoveryInput, { reason: "r", hours: 0 })).toBe("hours: hours must be more than 0");
    expect(refusal(pauseRecoveryInput, { reason: "r", hours: 169 })).toBe("hours: a pause lasts at most 168 hours (7 days)");
  });

  it("words an op resolution", () => {
    const base = { opId: "op-1", resolution: "verified_not_ran", reason: "checked" };
    expect(refusal(resolveOpInput, { ...base, opId: " " })).toBe("opId: which op? opId is required");
    expect(refusal(resolveOpInput, { ...base, opId: "o".repeat(201) })).toBe("opId: opId is too long (200 characters at most)");
    expect(refusal(resolveOpInput, { ...base, resolution: "maybe" })).toBe(
      "resolution: resolution must be verified_ran (it ran), verified_not_ran (it did not run) or rerun (re-run it now)",
    );
    expect(refusal(resolveOpInput, { ...base, resolution: "verified_ran" })).toBe(
      "resultRef: say where the result is (e.g. the payment provider's charge id) when the op ran",
    );
    expect(refusal(resolveOpInput, { ...base, resultRef: "r".repeat(501) })).toBe("resultRef: the result reference is too long (500 characters at most)");
  });

  it("leaves zod's words where it has no sentence, and the agent's own check answers in them", () => {
    expect(refusal(actionInput, { reason: "r", extra: 1 })).toContain("extra");
    // The agent parses without the words: still refused, with zod's sentence rather than ours.
    const agentSide = actionInput.safeParse({ reason: "" });
    expect(agentSide.success).toBe(false);
    expect(describeInput(agentSide.error!)).not.toContain("audit log");
  });
});
