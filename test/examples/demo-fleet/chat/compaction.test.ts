import { describe, expect, it } from "vitest";
import { chatAgent, eventsOfType, payloadOf, text } from "./chat-helpers";

/** Three short turns: enough history (six messages) for compaction to have a middle to summarise. */
const HISTORY = [
  text("The alert fired because the queue backed up. ".repeat(4)),
  text("The consumer was restarted at 10:02. ".repeat(4)),
  text("Lag is back under a second. ".repeat(4)),
];
const SUMMARY = "Summary: queue backlog, consumer restarted, lag recovered.";

describe("chat:context:compacted, for real", () => {
  it("reactive: a context-overflow rejection compacts the history and the turn is retried", async () => {
    const { name, stub } = await chatAgent("compact-reactive");
    await stub.setScript({ steps: [...HISTORY, { kind: "context_overflow" }, text("Nothing else is pending.")] });
    await stub.setScript({ lane: "summary", steps: [text(SUMMARY)] });
    for (const q of ["why did it fire?", "what did we do?", "is it fixed?"]) await stub.sendUserMessage(q);

    const out = await stub.sendUserMessage("anything else?");
    expect(out).toMatchObject({ status: "completed", reply: "Nothing else is pending." });

    const [compacted] = await eventsOfType(name, "chat.context.compacted");
    expect(payloadOf(compacted!)).toEqual({ mode: "reactive", shortened: true, attempt: 1 });
    expect(compacted!.request_id).toBe(out.requestId);

    const calls = await stub.modelCalls();
    expect(calls.slice(3).map((c) => [c.lane, c.kind])).toEqual([
      ["chat", "context_overflow"],
      ["summary", "text"],
      ["chat", "text"],
    ]);
    const [overflowed, , retried] = calls.slice(3);
    expect(retried!.requestId).toBe(overflowed!.requestId); // same turn, retried
    expect(retried!.promptChars).toBeLessThan(overflowed!.promptChars); // from the compacted history
    expect((await stub.transcript()).map((m) => m.text)).toContain(SUMMARY);
  });

  it("proactive: a step that reports a prompt near the window compacts before the next step", async () => {
    const { name, stub } = await chatAgent("compact-proactive");
    await stub.setRecoveryPolicy({ maxInputTokens: 10_000 });
    await stub.setScript({
      steps: [
        ...HISTORY,
        // Step 1 asks for a tool and reports 9 500 input tokens (over 90 % of the 10 000 budget).
        { kind: "tool_call", toolName: "lookup_notes", input: { topic: "queue" }, usage: { inputTokens: 9_500 } },
        text("The notes show no open incidents."),
      ],
    });
    await stub.setScript({ lane: "summary", steps: [text(SUMMARY)] });
    for (const q of ["why did it fire?", "what did we do?", "is it fixed?"]) await stub.sendUserMessage(q);

    const out = await stub.sendUserMessage("check the notes");
    expect(out).toMatchObject({ status: "completed", reply: "The notes show no open incidents." });

    const [compacted] = await eventsOfType(name, "chat.context.compacted");
    expect(payloadOf(compacted!)).toEqual({ mode: "proactive", shortened: true });
    const calls = await stub.modelCalls();
    expect(calls.slice(3).map((c) => [c.lane, c.kind])).toEqual([
      ["chat", "tool_call"],
      ["summary", "text"],
      ["chat", "text"],
    ]);
    expect((await stub.transcript()).map((m) => m.text)).toContain(SUMMARY);
  });
});
