import { getAgentByName } from "agents";
import { Hono } from "hono";
import { z } from "zod";
import { startSlowRecovery } from "./demo/chat-driver";
import { demoOptions, runDemoTick } from "./demo/driver";
import type { Env } from "./env";

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
 * The demo fleet's own HTTP surface, as an app in front of its agents would
 * have: talk to a demo session (optionally planning an eviction), and run one
 * tick of the demo driver. It is the fleet's, not the console's: the console
 * Worker ships none of it.
 */
export const app = new Hono<{ Bindings: Env }>();

app.get("/health", (c) => c.json({ ok: true }));

/** One tick of the demo fleet (`npm start` calls it every DEMO_INTERVAL_MS; `?size=N` sets the fleet size). */
app.post("/demo/tick", async (c) => c.json({ ok: true, done: await runDemoTick(c.env, demoOptions(c.env, c.req.query("size"))) }));

app.post("/dev/sessions/:name/messages", async (c) => {
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

/**
 * Wakes a demo session, as any request to it would: on wake the SDK recovers an interrupted turn. Tests call it
 * rather than the console, which reaches only agents it has heard from; a turn evicted at every start may not have
 * sent a single event yet.
 */
app.post("/dev/sessions/:name/wake", async (c) => {
  const session = await getAgentByName(c.env.DemoSessionAgent, c.req.param("name"));
  try {
    return c.json({ ok: true, value: { status: await session.status() } });
  } catch {
    // A planned eviction during the recovery breaks this call; the wake happened all the same.
    return c.json({ ok: false, error: { code: "evicted", message: "the session was evicted while it woke; wake it again" } }, 503);
  }
});

const chatForm = z.object({
  /** start: a user message whose stream stalls, then an eviction mid-stream; evict: evict again; wake: any call, so the SDK recovers. */
  step: z.enum(["start", "evict", "wake"], { error: "step must be start, evict or wake" }),
  /** JSON of a recovery policy patch (src/chat/recovery-policy.ts), for `start`. */
  policy: z.string().optional(),
});

/**
 * Drives the demo chat agent through a recovery, step by step: the SDK opens an incident on the wake after an
 * eviction mid-stream, and counts an attempt on every later wake (browser tests of recovery budgets use it).
 */
const slowForm = z.object({
  stallTimeoutMs: z.coerce.number().int().min(500).max(600_000, { error: "stallTimeoutMs must be 500 to 600000" }).optional(),
  maxAttempts: z.coerce.number().int().min(2).max(20, { error: "maxAttempts must be 2 to 20" }).optional(),
});

/** Starts the demo's slow, forecastable chat recovery (chat-driver.ts startSlowRecovery) on this agent, with a shorter watchdog for browser tests. */
app.post("/dev/chats/:name/slow-recovery", async (c) => {
  const form = slowForm.safeParse(await c.req.parseBody());
  if (!form.success) return c.json({ ok: false, error: { code: "invalid_input", message: form.error.issues.map((i) => i.message).join("; ") } }, 400);
  return c.json({ ok: true, done: await startSlowRecovery(c.env, { agentName: c.req.param("name"), ...form.data }) });
});

app.post("/dev/chats/:name", async (c) => {
  const form = chatForm.safeParse(await c.req.parseBody());
  if (!form.success) return c.json({ ok: false, error: { code: "invalid_input", message: form.error.issues.map((i) => i.message).join("; ") } }, 400);
  const chat = await getAgentByName(c.env.ChatAgent, c.req.param("name"));
  try {
    if (form.data.step === "start") {
      if (form.data.policy) await chat.setRecoveryPolicy(JSON.parse(form.data.policy));
      // The turn stalls after its first words; every recovery turn stalls with none (no progress), so each wake
      // after the SDK's 30 s debounce counts one more attempt.
      await chat.setScript({ steps: [{ kind: "stall", chunks: ["Working on it"] }, ...Array.from({ length: 20 }, () => ({ kind: "stall" as const }))] });
      await chat.startUserMessage("rebuild the search index");
    }
    if (form.data.step !== "wake") await chat.evict("planned fault: dev: evicted mid-stream");
    else await chat.recoveryIncidents();
  } catch {
    // An eviction surfaces as a broken call; the next wake lets the SDK recover the turn.
  }
  return c.json({ ok: true });
});
