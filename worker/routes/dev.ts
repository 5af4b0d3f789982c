import { getAgentByName } from "agents";
import { Hono } from "hono";
import { z } from "zod";
import type { ConsoleEnv } from "./context";

const messageForm = z.object({
  text: z.string().trim().min(1, "a message needs some text").max(4000),
  /** Optional scripted-model behaviour for this turn (JSON of a TurnScript). */
  script: z.string().optional(),
});

/**
 * Local-dev helpers for demos and end-to-end tests: talk to a session the way
 * an app would. Exists only in AUTH_MODE=dev (404 otherwise); operator only.
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
  const session = await getAgentByName(c.env.SessionAgent, c.req.param("name"));
  if (script) await session.setScript(script as never);
  return c.json(await session.sendMessage(form.data.text));
});
