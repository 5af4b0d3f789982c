import type { z } from "zod";
import {
  type ActionInput,
  type AdminError,
  type AdminRpc,
  actionInput,
  type ForceIdleOutput,
  forceIdleOutput,
  PAUSE_CONTRACT,
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
  type TriggerAlarmOutput,
  triggerAlarmOutput,
} from "./contract.js";

/**
 * The one definition of each admin action: its audit name, route slug (which is also the CLI verb:
 * `npm run cli -- <slug>` posts to `/actions/<slug>`), label, the RPC method the mixin answers with,
 * what it acts on (`scope`: the whole agent, or one op of its ledger), the least role that may take it, whether
 * a bulk action may take it on many agents, and the input and output schemas the route and the client check.
 * Routes, forms, the client, bulk, the audit filter and the CLI all follow this table; what differs per action
 * beyond these fields lives in exhaustive `Record<AdminActionName, …>` tables beside its use, so an action
 * added here and not wired everywhere fails the typecheck (test/admin-rpc/action-tables.test.ts).
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
    output: forceIdleOutput as z.ZodType<ForceIdleOutput>,
  },
  trigger_alarm: {
    slug: "trigger-alarm",
    label: "Trigger alarm",
    rpc: "adminTriggerAlarm",
    scope: "agent",
    role: "operator",
    bulk: true,
    input: actionInput as z.ZodType<ActionInput>,
    output: triggerAlarmOutput as z.ZodType<TriggerAlarmOutput>,
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
  },
  resolve_op: {
    slug: "resolve-op",
    label: "Resolve op",
    rpc: "adminResolveOpRecords",
    scope: "op",
    role: "operator",
    bulk: false,
    input: resolveOpInput as z.ZodType<ResolveOpInput>,
    output: resolveOpOutput as z.ZodType<ResolveOpOutput>,
  },
} as const satisfies Record<
  string,
  {
    slug: string;
    label: string;
    rpc: keyof AdminRpc;
    /** The admin contract that brought the method; an agent that lacks it is refused with a sentence saying what to upgrade. */
    since?: number;
    scope: "agent" | "op";
    /** The least role that may take it (operator implies viewer). */
    role: "viewer" | "operator";
    /** Whether a bulk action may take it on every agent a filter selects (agent-scoped actions only). */
    bulk: boolean;
    input: z.ZodType<{ reason: string }>;
    output: z.ZodType<unknown>;
  }
>;

export type AdminActionName = keyof typeof ADMIN_ACTIONS;
export const ADMIN_ACTION_NAMES = Object.keys(ADMIN_ACTIONS) as AdminActionName[];
/** Actions on a whole agent (the agent page's buttons): their input is a reason only. */
export type AgentActionName = { [K in AdminActionName]: (typeof ADMIN_ACTIONS)[K]["scope"] extends "agent" ? K : never }[AdminActionName];
export const AGENT_ACTION_NAMES = ADMIN_ACTION_NAMES.filter((a): a is AgentActionName => ADMIN_ACTIONS[a].scope === "agent");

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
