import type { z } from "zod";
import { PAUSE_MAX_HOURS } from "./inputs.js";

/**
 * The operator's sentences for a refused admin input. The schemas (inputs.ts) hold the shapes only, because the
 * agent runs them too and an agent Worker should not carry words only the console shows; the Worker-side client
 * checks every input with them first, with these words (`schema.safeParse(input, { error: inputWords })`).
 * A field is named by the last key of the issue's path; an issue no sentence covers keeps zod's own words.
 */
export const inputWords: z.core.$ZodErrorMap = (issue) => {
  const field = [...(issue.path ?? [])].reverse().find((k) => typeof k === "string");
  const most = "maximum" in issue ? Number(issue.maximum) : null;
  switch (field) {
    case "reason":
      if (issue.code === "too_big") return `the reason is too long (${most} characters at most)`;
      return issue.code === "too_small" ? "a reason is required: say why, for the audit log" : "a reason is required";
    case "id":
    case "ids":
      // `ids` itself too long, or one of its ids empty.
      if (issue.code === "too_big" && issue.origin === "array") return `at most ${most} ids per call`;
      return issue.code === "too_small" ? "a run id is required" : undefined;
    case "recent":
      return issue.code === "too_big" ? `at most the ${most} most recent runs of each kind` : undefined;
    case "hours":
      if (issue.code === "too_small") return "hours must be more than 0";
      if (issue.code === "too_big") return `a pause lasts at most ${most} hours (${Number(most) / 24} days)`;
      return `hours must be a number of hours, at most ${PAUSE_MAX_HOURS}`;
    case "opId":
      return issue.code === "too_big" ? `opId is too long (${most} characters at most)` : "which op? opId is required";
    case "resolution":
      return "resolution must be verified_ran (it ran), verified_not_ran (it did not run) or rerun (re-run it now)";
    case "resultRef":
      if (issue.code === "too_big") return `the result reference is too long (${most} characters at most)`;
      return issue.code === "custom" ? "say where the result is (e.g. the payment provider's charge id) when the op ran" : undefined;
    case undefined:
      // The one check on no field (findRunsInput): which runs to look at was not said.
      return issue.code === "custom" ? "say which runs: ids, recent, or both" : undefined;
    default:
      return undefined;
  }
};
