import type { z } from "zod";
import {
  type ActionEvents,
  type ActionVerdict,
  answerVerdict,
  forceIdleEvents,
  forceIdleVerdict,
  pauseEvents,
  pauseVerdict,
  resolveOpEvents,
  resumeEvents,
  resumeVerdict,
  triggerAlarmEvents,
  triggerAlarmVerdict,
} from "./action-effects.js";
import {
  type ActionInput,
  type AdminError,
  type AdminResult,
  actionInput,
  PAUSE_CONTRACT,
  PAUSE_MAX_HOURS,
  type PauseRecoveryInput,
  type PauseRecoveryOutput,
  pauseRecoveryInput,
  pauseRecoveryOutput,
  type ResolveOpInput,
  type ResolveOpOutput,
  type ResumeRecoveryOutput,
  resolveOpInput,
  resolveOpOutput,
  resumeRecoveryOutput,
  type TriggerAlarmAnswer,
  type TriggerAlarmOutput,
  triggerAlarmOutput,
} from "./contract.js";
import { forceIdleAnswer } from "./force-idle-verdicts.js";

/** What every action states, whatever it acts on. */
type ActionFacts = {
  /** The route slug, which is also the CLI verb: `npm run cli -- <slug>` posts to `/actions/<slug>`. */
  slug: string;
  label: string;
  /**
   * The mixin's method that answers it (the agent-side handler). AdminRpc (contract.ts) derives its signature from
   * this entry, so a mixin without it fails the typecheck.
   */
  rpc: `admin${string}`;
  /** The admin contract that brought the method; an agent that lacks it is refused with a sentence saying what to upgrade. */
  since?: number;
  /** The least role that may take it (operator implies viewer). */
  role: "viewer" | "operator";
  /** What the route and the client check the input with (its fields are the form's and the CLI's): a reason at least. */
  input: z.ZodType<{ reason: string }>;
  /**
   * What the client checks the agent's answer with. Where its input type is declared (force idle: the agent's facts,
   * which it judges), the mixin's method answers that input; otherwise the output itself.
   */
  output: z.ZodType<unknown>;
  /** How the client judges the answer for the audit (action-effects.ts; `answerVerdict`: the answer says it). */
  verify: ActionVerdict;
  /** The events it sends once audited (action-effects.ts; `noEvents`: none). */
  emit: ActionEvents;
};

/**
 * One action's entry: an action on a whole agent (the agent page's forms, bulk if `bulk`) states its form's words in
 * `confirm`; an action on one op of the agent's ledger has its own control (console/components/resolve-op.tsx).
 */
export type AdminActionEntry =
  | (ActionFacts & {
      scope: "agent";
      /** Whether a bulk action may take it on every agent a filter selects. */
      bulk: boolean;
      /**
       * The words of its form, which asks for a reason before it acts: what it does (`help`, where the agent's
       * capabilities say no more: console/action-words.ts), an example reason, and whether it is dangerous.
       */
      confirm: { help: string; placeholder: string; danger: boolean };
    })
  | (ActionFacts & { scope: "op"; bulk: false });

/**
 * The one definition of each admin action (AdminActionEntry): its audit name, route slug and CLI verb, label, the
 * RPC method the mixin answers with, what it acts on (`scope`), the least role that may take it, whether a bulk
 * action may take it, its input and output schemas, how its answer is judged and what events it sends, and its
 * form's words. Routes, forms, the client, the mixin's RPC surface, bulk, the audit filter and the CLI all follow
 * this table, so a new action is its entry here, its handler in mixin.ts, and its test
 * (test/admin-rpc/action-tables.test.ts). The console words its answer from the facts where console/action-words.ts
 * has words for it (DONE), and plainly otherwise.
 */
export const ADMIN_ACTIONS = {
  force_idle: {
    slug: "force-idle",
    label: "Force idle",
    rpc: "adminForceIdle",
    scope: "agent",
    role: "operator",
    bulk: true,
    input: actionInput as z.ZodType<ActionInput>,
    // The agent answers facts (contract 10); the client judges them (force-idle-verdicts.ts).
    output: forceIdleAnswer,
    verify: forceIdleVerdict,
    emit: forceIdleEvents,
    confirm: {
      // The agent's capabilities say more where it reported them (console/action-words.ts).
      help: "Aborts the active turn and fibers, removes their run rows so nothing is recovered, and clears recovery counters.",
      placeholder: "e.g. turn stuck for 20 minutes, customer waiting",
      danger: true,
    },
  },
  trigger_alarm: {
    slug: "trigger-alarm",
    label: "Trigger alarm",
    rpc: "adminTriggerAlarm",
    scope: "agent",
    role: "operator",
    bulk: true,
    input: actionInput as z.ZodType<ActionInput>,
    output: triggerAlarmOutput as z.ZodType<TriggerAlarmOutput, TriggerAlarmAnswer>,
    verify: triggerAlarmVerdict,
    emit: triggerAlarmEvents,
    confirm: { help: "Runs the agent's alarm now: housekeeping and fiber recovery.", placeholder: "e.g. recover the evicted fiber now", danger: false },
  },
  pause_recovery: {
    slug: "pause-recovery",
    label: "Pause recovery",
    rpc: "adminPauseRecovery",
    since: PAUSE_CONTRACT,
    scope: "agent",
    role: "operator",
    // In bulk, a pause lasts PAUSE_DEFAULT_HOURS: a bulk action carries a reason only.
    bulk: true,
    input: pauseRecoveryInput as unknown as z.ZodType<PauseRecoveryInput & { reason: string }>,
    output: pauseRecoveryOutput as z.ZodType<PauseRecoveryOutput>,
    verify: pauseVerdict,
    emit: pauseEvents,
    confirm: {
      help: `Holds the agent's fiber recovery back until the pause expires (at most ${PAUSE_MAX_HOURS} hours) or is resumed. Nothing is lost: interrupted runs stay recoverable.`,
      placeholder: "e.g. recovery retries are running up the LLM bill",
      danger: true,
    },
  },
  resume_recovery: {
    slug: "resume-recovery",
    label: "Resume recovery",
    rpc: "adminResumeRecovery",
    since: PAUSE_CONTRACT,
    scope: "agent",
    role: "operator",
    bulk: true,
    input: actionInput as z.ZodType<ActionInput>,
    output: resumeRecoveryOutput as z.ZodType<ResumeRecoveryOutput>,
    verify: resumeVerdict,
    emit: resumeEvents,
    confirm: {
      help: "Ends the pause and recovers what it held back now (the agent's alarm runs its recovery).",
      placeholder: "e.g. the upstream is fixed",
      danger: false,
    },
  },
  resolve_op: {
    slug: "resolve-op",
    label: "Resolve op",
    // Since contract 7 the agent answers its hook's answer and the client builds the output (client.ts resolveOpCall).
    rpc: "adminResolveOpRecords",
    scope: "op",
    role: "operator",
    bulk: false,
    input: resolveOpInput as z.ZodType<ResolveOpInput>,
    output: resolveOpOutput as z.ZodType<ResolveOpOutput>,
    verify: answerVerdict,
    emit: resolveOpEvents,
  },
} as const satisfies Record<string, AdminActionEntry>;

export type AdminActionName = keyof typeof ADMIN_ACTIONS;
export const ADMIN_ACTION_NAMES = Object.keys(ADMIN_ACTIONS) as AdminActionName[];
/** Actions on a whole agent (the agent page's buttons): their input is a reason only. */
export type AgentActionName = { [K in AdminActionName]: (typeof ADMIN_ACTIONS)[K]["scope"] extends "agent" ? K : never }[AdminActionName];
export const AGENT_ACTION_NAMES = ADMIN_ACTION_NAMES.filter((a): a is AgentActionName => ADMIN_ACTIONS[a].scope === "agent");

/**
 * The mixin's method for each action, typed by its entry's output: the part of AdminRpc (contract.ts) that
 * ADMIN_ACTIONS defines. Resolve op's method answers its hook's answer instead (contract.ts declares it).
 */
export type AdminActionRpc = {
  [K in AdminActionName as (typeof ADMIN_ACTIONS)[K]["rpc"]]: (input: unknown) => Promise<AdminResult<AgentAnswer<(typeof ADMIN_ACTIONS)[K]["output"]>>>;
};

/** What the agent answers for an output schema: its declared input (facts the client judges), else its output. */
type AgentAnswer<S> = S extends z.ZodType<infer O, infer I> ? (unknown extends I ? O : I) : never;

/** Actions a bulk action may take (`bulk: true`). */
export type BulkActionName = { [K in AdminActionName]: (typeof ADMIN_ACTIONS)[K]["bulk"] extends true ? K : never }[AdminActionName];
export const BULK_ACTION_NAMES = ADMIN_ACTION_NAMES.filter((a): a is BulkActionName => ADMIN_ACTIONS[a].bulk) as unknown as readonly [
  BulkActionName,
  ...BulkActionName[],
];

const ROLE_RANK: Record<"viewer" | "operator", number> = { viewer: 0, operator: 1 };

/**
 * The refusal of an action whose method the agent lacks (no admin mixin, or one older than the action): the agent
 * and what to upgrade, as facts (the console words them: console/admin-words.ts). Null for actions every mixin has
 * (the client's own `no_mixin` refusal then says the mixin is missing).
 */
export function upgradeRefusal(action: AdminActionName, agentClass: string, agentName: string): AdminError | null {
  const a: { rpc: string; since?: number } = ADMIN_ACTIONS[action];
  if (a.since === undefined) return null;
  return {
    code: "unsupported",
    message: `${agentClass} "${agentName}" lacks ${a.rpc} (admin contract ${a.since})`,
    facts: { kind: "upgrade", action, rpc: a.rpc, since: a.since, agentClass, agentName },
  };
}

/** Whether `role` may take `action` (operator implies viewer). */
export function mayTake(role: "viewer" | "operator", action: AdminActionName): boolean {
  return ROLE_RANK[role] >= ROLE_RANK[ADMIN_ACTIONS[action].role];
}

/** The input fields of an action, as its schema names them (the route reads exactly these from a form). */
export function inputFields(action: AdminActionName): string[] {
  const schema = ADMIN_ACTIONS[action].input as unknown as { shape?: Record<string, unknown> };
  return Object.keys(schema.shape ?? { reason: true });
}

/** The action a route slug names, or null. */
export function actionBySlug(slug: string): AdminActionName | null {
  return ADMIN_ACTION_NAMES.find((a) => ADMIN_ACTIONS[a].slug === slug) ?? null;
}
