import { Hono } from "hono";
import type { Env } from "./env";

/** The console's HTTP app. Routes are added by console/ (pages) and worker/ (auth, actions). */
export const app = new Hono<{ Bindings: Env }>();

app.get("/health", (c) => c.json({ ok: true }));

app.notFound((c) => c.text("Not found", 404));

// Never a stack trace or a 5xx body with internals: log it, answer plainly.
app.onError((err, c) => {
  console.error(`[worker] ${c.req.method} ${c.req.path}: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
  return c.text("Something went wrong on our side. It has been logged.", 500);
});
