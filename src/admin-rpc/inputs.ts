import { z } from "zod";

/**
 * The part of the admin RPC contract the agent side runs: what the mixin validates (every input, and what an agent's
 * hooks answer), the result and error shapes, and the contract's version. The answers' schemas live in contract.ts,
 * which re-exports this: only the Worker-side client parses answers, so a user's agent Worker never bundles them.
 */

/**
 * `unsupported`: the target does not have the admin mixin (or lacks the method), so it cannot answer at all.
 * `unavailable`: it has, but could not answer now (being evicted, failing); `timeout`: it did not answer in time.
 */
export const ADMIN_ERROR_CODES = ["not_found", "not_permitted", "invalid_input", "agent_terminated", "unsupported", "timeout", "unavailable"] as const;
export type AdminErrorCode = (typeof ADMIN_ERROR_CODES)[number];

/**
 * What a refusal rests on, for the console to word (console/admin-words.ts), where the error has facts beyond its
 * code. `no_mixin`: the class has no admin mixin at all; `upgrade`: its mixin predates the action's method (`rpc`,
 * which came with admin contract `since`); `cause` fields hold the platform's own error text.
 */
export type AdminErrorFacts =
  | { kind: "no_mixin"; agentClass: string }
  | { kind: "upgrade"; action: string; rpc: string; since: number; agentClass: string; agentName: string }
  // The console's side (the client): where the call could not go, or what came back.
  | { kind: "not_addressable"; agentClass: string; allowed: string[] }
  | { kind: "not_registered"; agentClass: string; agentName: string }
  | { kind: "no_binding"; agentClass: string }
  // A sub-agent under a sub-agent: the SDK's public bridge reaches only a top-level agent's own sub-agents.
  | { kind: "nested_sub_agent"; agentClass: string; depth: number }
  // An agent the tail keyed by another Worker (or object) than its class's binding addresses (telemetry workers.ts).
  | { kind: "other_worker"; agentClass: string; worker: string | null }
  | { kind: "timeout"; limitMs: number }
  | { kind: "unreachable"; cause: string }
  | { kind: "bad_answer"; detail: string | null }
  | { kind: "lookup_failed"; cause: string }
  | { kind: "audit_failed"; cause: string }
  | { kind: "no_outcome" }
  | { kind: "console_failed"; cause: string }
  | { kind: "role"; email: string; role: string; needs: string }
  // The agent's side (the mixin).
  | { kind: "agent_failed"; cause: string }
  | { kind: "no_live_run"; id: string }
  | { kind: "terminated"; action: "force_idle" | "trigger_alarm" }
  | { kind: "no_resolve_hook"; agentClass: string }
  | { kind: "hook_bad_answer"; detail: string }
  | { kind: "no_op"; opId: string }
  | { kind: "op_not_ambiguous"; opId: string; status: string; resolution: string | null };

/**
 * A failed admin call, as a value (contract.ts `adminError` is its schema). `message` is a short technical
 * statement for logs and programs; `facts`, where present, is what an operator's sentence is built from.
 */
export type AdminError = { code: AdminErrorCode; message: string; facts?: AdminErrorFacts | undefined };

/** Every admin call answers with this: a value or a typed error. */
export type AdminResult<T> = { ok: true; value: T } | { ok: false; error: AdminError };
export const ok = <T>(value: T): AdminResult<T> => ({ ok: true, value });
export const fail = <T = never>(code: AdminErrorCode, message: string, facts?: AdminErrorFacts): AdminResult<T> => ({
  ok: false,
  error: facts ? { code, message, facts } : { code, message },
});

// The inputs' shapes only: the operator's sentences for a refused input are the Worker side's (input-words.ts),
// which checks every input with these schemas before it calls an agent. The agent checks again (a caller other than
// our client gets a typed answer too), in zod's own words.

const reason = z.string().trim().min(1).max(2000);

export const runIdInput = z.object({ id: z.string().trim().min(1).max(200) }).strict();
export const actionInput = z.object({ reason }).strict();
export type ActionInput = z.infer<typeof actionInput>;

/**
 * Reconciliation's question: what does the agent still record of these runs (by the ids the console keys them
 * by: fiber id, Tasks runId, chat turn request id), and/or of its most recent runs (`recent`, newest first)?
 */
export const findRunsInput = z
  .object({
    ids: z.array(z.string().trim().min(1).max(200)).max(100).optional(),
    recent: z.number().int().min(1).max(100).optional(),
  })
  .strict()
  // An issue on no field: which runs to look at was not said (input-words.ts words it).
  .refine((v) => (v.ids?.length ?? 0) > 0 || v.recent !== undefined);
export type FindRunsInput = z.infer<typeof findRunsInput>;

/**
 * Version of this contract, reported in `capabilities.contract`. 11: the status's `status` is what it is derived from
 * (contract.ts StatusWork) unless the agent's own hook derives it, and its chat-recovery incidents are the SDK's records;
 * the client derives the status and picks the records' fields. 10: force idle answers what it found and did
 * (ForceIdleFacts) and the client judges each run (force-idle-verdicts.ts); the status's `telemetry` is the outbox's
 * stats() as they are, picked by the client. 9: force idle's `incidents` are only those it
 * closed (open when it ran), and `alreadyClosed` lists the records of incidents the SDK had already closed. 8: the status's `telemetry` (the pipeline's own
 * counts: sent, waiting, failed sends, dropped). 7: the read-only reads answer the SDK's records
 * (`adminFindRunRecords`, `adminResidencyRecords`, `adminVerifyRecords`) and the client builds the answers; the
 * client falls back to the earlier methods for older agents. 6: force idle answers facts (an ended run's `why`,
 * the `notice` code), not sentences. 5: `adminPauseRecovery` / `adminResumeRecovery`
 * and the status's `recoveryPause`. 4: `adminFindRuns` and the `adminRunRecord`
 * hook (reconciliation asks what the agent records), and the status `waiting`. 3: `adminResolveOp`.
 */
export const ADMIN_CONTRACT_VERSION = 11;
/** The contract from which force idle tells the incidents it closed from records of incidents already closed. */
export const FORCE_IDLE_CLOSED_CONTRACT = 9;
/** The contract that brought the recovery pause: an agent below it is refused with a sentence saying what to upgrade. */
export const PAUSE_CONTRACT = 5;

/** The longest pause an operator may ask for: a pause always ends by itself. */
export const PAUSE_MAX_HOURS = 7 * 24;
/** How long a pause lasts when the operator does not say (bulk actions take a reason only). */
export const PAUSE_DEFAULT_HOURS = 24;

export const pauseRecoveryInput = z
  .object({
    reason,
    hours: z.coerce.number().positive().max(PAUSE_MAX_HOURS).default(PAUSE_DEFAULT_HOURS),
  })
  .strict();
export type PauseRecoveryInput = z.input<typeof pauseRecoveryInput>;

/** One incident's recovery budget (its id), or every chat-recovery record's. */
export const recoveryBudgetInput = z.object({ incidentId: z.string().trim().min(1).max(500).optional() }).strict();
export type RecoveryBudgetInput = z.infer<typeof recoveryBudgetInput>;

/** The SDK ids of runs to read back after an action (Tasks run ids, fiber ids). */
export const verifyInput = z.object({ ids: z.array(z.string().trim().min(1).max(200)).max(200) }).strict();

/**
 * How an operator settles an ambiguous op (one that started before an eviction and may have run):
 * - `verified_ran`: they checked upstream and it ran; `resultRef` says where its result is (e.g. the charge id);
 * - `verified_not_ran`: they checked and it did not run;
 * - `rerun`: re-run it now, with its idempotency key, so the upstream dedupes. Only for idempotent ops: the agent decides.
 */
export const OP_RESOLUTIONS = ["verified_ran", "verified_not_ran", "rerun"] as const;
export type OpResolution = (typeof OP_RESOLUTIONS)[number];

export const resolveOpInput = z
  .object({
    opId: z.string().trim().min(1).max(200),
    resolution: z.enum(OP_RESOLUTIONS),
    resultRef: z.string().trim().max(500).optional(),
    reason,
  })
  .strict()
  .superRefine((v, ctx) => {
    // An op that ran needs where its result is (input-words.ts words it).
    if (v.resolution === "verified_ran" && !v.resultRef) ctx.addIssue({ code: "custom", path: ["resultRef"], input: v.resultRef });
  });
export type ResolveOpInput = z.infer<typeof resolveOpInput>;

/** What the mixin passes to `onAdminResolveOp`: validated, with the reason the operator gave. */
export type ResolveOpRequest = { opId: string; resolution: OpResolution; resultRef: string | null; reason: string };

/** Formats zod issues for a person. */
export function describeInput(error: z.ZodError): string {
  return error.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ");
}
