import { getAgentByName } from "agents";
import { Hono } from "hono";
import { z } from "zod";
import type { ConsoleEnv } from "./context";

const TURN_POINTS = ["turn_start", "mid_stream", "before_op_started", "after_op_started", "after_op_completed", "after_turn"] as const;

const messageForm = z.object({
  text: z.string().trim().min(1, "a message needs some text").max(4000),
  /** Optional scripted-model behaviour for this turn (JSON of a TurnScript). */
  script: z.string().optional(),
  /** Optional planned eviction for this turn: where, and how many times (more than 5 makes a poison turn). */
  evictAt: z.enum(TURN_POINTS, { error: `evictAt must be one of ${TURN_POINTS.join(", ")}` }).optional(),
  evictKind: z.string().max(200).optional(),
  evictTimes: z.coerce.number().int().min(1).max(20).optional(),
});

/**
 * Local-dev helpers for demos and end-to-end tests: talk to a demo session the
 * way an app would, optionally planning an eviction. Exists only in
 * AUTH_MODE=dev (404 otherwise); operator only.
 */
export const dev = new Hono<ConsoleEnv>();

dev.use("/dev/*", async (c, next) => {
  if (!c.var.devAuth) return c.notFound();
  if (c.var.user.role !== "operator") return c.json({ ok: false, error: { code: "not_permitted", message: "dev helpers need the operator role" } }, 403);
  await next();
});

dev.post("/dev/sessions/:name/messages", async (c) => {
  const form = messageForm.safeParse(await c.req.parseBody());
  if (!form.success) return c.json({ ok: false, error: { code: "invalid_input", message: form.error.issues.map((i) => i.message).join("; ") } }, 400);
  let script: unknown;
  if (form.data.script) {
    try {
      script = JSON.parse(form.data.script);
    } catch {
      return c.json({ ok: false, error: { code: "invalid_input", message: "script must be JSON" } }, 400);
    }
  }
  const session = await getAgentByName(c.env.DemoSessionAgent, c.req.param("name"));
  if (script) await session.setScript(script as never);
  const { evictAt, evictKind, evictTimes } = form.data;
  await session.planEviction(evictAt ? { point: evictAt, times: evictTimes ?? 1, ...(evictKind ? { kind: evictKind } : {}) } : null);
  const r = await session.sendMessage(form.data.text);
  return c.json(r, r.ok ? 200 : r.error.code === "invalid_input" ? 400 : 409);
});
