import { createExecutionContext, createMessageBatch, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../worker/index";
import { CRONS, QUEUES } from "../../worker/topology";
import wranglerText from "../../wrangler.jsonc?raw";

/** wrangler.jsonc as data: comments outside strings and trailing commas removed, then JSON. */
function parseJsonc(text: string): unknown {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '"') {
      const end = /"(?:[^"\\]|\\.)*"/y;
      end.lastIndex = i;
      const m = end.exec(text);
      if (!m) throw new Error(`unterminated string at ${i}`);
      out += m[0];
      i += m[0].length - 1;
    } else if (ch === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
      out += "\n";
    } else if (ch === "/" && text[i + 1] === "*") {
      i = text.indexOf("*/", i + 2) + 1;
    } else out += ch;
  }
  return JSON.parse(out.replace(/,(\s*[}\]])/g, "$1"));
}

type Consumer = { queue: string; max_retries?: number; dead_letter_queue?: string };
const config = parseJsonc(wranglerText) as {
  queues: { producers: { binding: string; queue: string }[]; consumers: Consumer[] };
  triggers: { crons: string[] };
};

describe("worker/topology.ts is wrangler.jsonc's queues and crons", () => {
  it("declares exactly the consumers wrangler.jsonc configures, with their max_retries and dead-letter queue", () => {
    const declared = Object.values(QUEUES).map((q) => ({
      queue: q.name,
      max_retries: q.maxRetries,
      dead_letter_queue: "deadLetterQueue" in q ? q.deadLetterQueue : undefined,
    }));
    const configured = config.queues.consumers.map((c) => ({ queue: c.queue, max_retries: c.max_retries, dead_letter_queue: c.dead_letter_queue }));
    expect(declared.sort((a, b) => a.queue.localeCompare(b.queue))).toEqual(configured.sort((a, b) => a.queue.localeCompare(b.queue)));
  });

  it("produces only to queues it declares", () => {
    const names = Object.values(QUEUES).map((q) => q.name);
    for (const p of config.queues.producers) expect(names, p.binding).toContain(p.queue);
  });

  it("declares exactly the crons wrangler.jsonc triggers", () => {
    expect(Object.values(CRONS).sort()).toEqual([...config.triggers.crons].sort());
  });
});

describe("the Worker refuses queues and crons it does not declare", () => {
  afterEach(() => vi.restoreAllMocks());

  it("throws on a batch from an unknown queue, and logs it, instead of ingesting it as telemetry", async () => {
    const deadLetters = () => env.DB.prepare("SELECT count(*) AS n FROM dead_letters").first<{ n: number }>();
    const before = await deadLetters();
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const batch = createMessageBatch("agent-telemetry-typo", [{ id: "m1", timestamp: new Date(), attempts: 1, body: { not: "an event" } }]);
    await expect(worker.queue!(batch, env, createExecutionContext())).rejects.toThrow(/queue "agent-telemetry-typo"/);
    expect(logged.mock.calls.flat().join("\n")).toMatch(/refused a batch from queue "agent-telemetry-typo"/);
    // The telemetry handler would have dead-lettered this body: nothing was written.
    expect(await deadLetters()).toEqual(before);
  });

  it("throws on an unknown cron, and logs it, instead of running retention", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const said = vi.spyOn(console, "log");
    const ctx = createExecutionContext();
    await expect(worker.scheduled!(createScheduledController({ cron: "0 0 * * *", scheduledTime: Date.now() }), env, ctx)).rejects.toThrow(
      /cron "0 0 \* \* \*"/,
    );
    await waitOnExecutionContext(ctx);
    expect(logged.mock.calls.flat().join("\n")).toMatch(/refused cron "0 0 \* \* \*"/);
    expect(said.mock.calls.flat().join("\n")).not.toMatch(/\[retention\]|\[reconcile\]/);
  });
});
