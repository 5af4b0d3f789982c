import type { z } from "zod";
import { type AdminRpc, type ForceIdleOutput, forceIdleOutput, type TriggerAlarmOutput, triggerAlarmOutput } from "./contract.js";

/**
 * The one definition of each admin action: its audit name, route slug (which is also the CLI verb:
 * `npm run cli -- <slug>` posts to `/actions/<slug>`), label, the RPC method the mixin answers with,
 * and the output schema the client checks. Routes, forms, the client and the CLI all follow this table.
 */
export const ADMIN_ACTIONS = {
  force_idle: {
    slug: "force-idle",
    label: "Force idle",
    rpc: "adminForceIdle",
    output: forceIdleOutput as z.ZodType<ForceIdleOutput>,
  },
  trigger_alarm: {
    slug: "trigger-alarm",
    label: "Trigger alarm",
    rpc: "adminTriggerAlarm",
    output: triggerAlarmOutput as z.ZodType<TriggerAlarmOutput>,
  },
} as const satisfies Record<string, { slug: string; label: string; rpc: keyof AdminRpc; output: z.ZodType<unknown> }>;

export type AdminActionName = keyof typeof ADMIN_ACTIONS;
export const ADMIN_ACTION_NAMES = Object.keys(ADMIN_ACTIONS) as AdminActionName[];

/** The action a route slug names, or null. */
export function actionBySlug(slug: string): AdminActionName | null {
  return ADMIN_ACTION_NAMES.find((a) => ADMIN_ACTIONS[a].slug === slug) ?? null;
}
