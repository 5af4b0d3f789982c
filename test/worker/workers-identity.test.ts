import { env } from "cloudflare:workers";
import { AGENT_CHANNEL, AGENT_MESSAGE_VERSION } from "@agent-oncall/admin-rpc/facts";
import type { TailItem } from "@agent-oncall/telemetry/tail";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleAdminClient } from "../../worker/admin-client";
import type { Env } from "../../worker/env";
import { forgetFacetFindings } from "../../worker/ingest/facet-parents";
import { handleTail } from "../../worker/tail";
import { pollRows, pollRunRows } from "../helpers";
import { publishEnvTeamKeys } from "./access-tokens";
import { findAll, mustTestId } from "./html";
import { getText, uid } from "./routes/harness";

/**
 * One console tailing two Workers that both host a class named `PlainAdminAgent` with an agent of the same name.
 * The console binds the class (AGENT_CLASSES): its binding's idFromName(name) is the object it can act on. A trace
 * item with another id for that name is some other Worker's agent: kept apart, offered nothing, never asked.
 */

const CLASS = "PlainAdminAgent";
const enc = encodeURIComponent;
const bound = () => (env as unknown as Record<string, DurableObjectNamespace>)[CLASS]!;
const actionPosts = (html: string) => findAll(html, "hx-post").filter((f) => f.attrs["hx-post"]!.startsWith("/actions/"));
/** A Durable Object id no binding of this console gives (64 hex characters, like the runtime's). */
const foreignId = () => [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("");

/** One invocation of `name`'s object, as the runtime forwards it: a runFiber that started and completed. */
function runItem(name: string, fiberId: string, of: { durableObjectId: string; scriptName: string | null }): TailItem {
  const t = Date.now();
  const msg = (type: string, extra: Record<string, unknown> = {}) => ({
    timestamp: t,
    channel: "agents:fiber",
    message: { type, agent: CLASS, name, timestamp: t, payload: { fiberId, fiberName: "import", managed: false, ...extra } },
  });
  return {
    scriptName: of.scriptName,
    durableObjectId: of.durableObjectId,
    eventTimestamp: t,
    truncated: false,
    diagnosticsChannelEvents: [msg("fiber:run:started"), msg("fiber:run:completed", { elapsedMs: 3 })],
  };
}

/** The registry's agents of this name, by class. */
const agentsNamed = (name: string, n: number) =>
  pollRows<{ agent_class: string }>("SELECT agent_class FROM agents WHERE agent_name = ? ORDER BY agent_class", [name], (rs) => rs.length === n);

beforeAll(() => publishEnvTeamKeys());

describe("identity across Workers", () => {
  it("keeps another Worker's same-named agent apart from the bound one, offers it no actions and never asks it", async () => {
    const name = `a-${uid()}`;
    const [mine, theirs] = [`mine-${uid()}`, `theirs-${uid()}`];
    await handleTail(
      [
        runItem(name, mine, { durableObjectId: bound().idFromName(name).toString(), scriptName: null }),
        runItem(name, theirs, { durableObjectId: foreignId(), scriptName: "other-worker" }),
      ],
      env as Env,
    );

    // Two agents: the bound one under its plain class, unchanged; the other one keyed by its Worker.
    expect((await agentsNamed(name, 2)).map((r) => r.agent_class)).toEqual([CLASS, `${CLASS}@other-worker`]);
    // Each run under its own agent.
    const runs = await pollRunRows<{ agent_class: string; fiber_id: string; outcome: string | null }>(
      name,
      (r) => r.fiber_id === mine || r.fiber_id === theirs,
      (rs) => rs.length === 2 && rs.every((r) => r.outcome === "completed"),
    );
    expect(runs.map((r) => [r.fiber_id, r.agent_class]).sort()).toEqual(
      [
        [mine, CLASS],
        [theirs, `${CLASS}@other-worker`],
      ].sort(),
    );

    // The other Worker's agent: its page says why it is not the one the console acts on, and offers nothing.
    const other = await getText(`/agents/${enc(`${CLASS}@other-worker`)}/${enc(name)}`, "operator");
    expect(other.status).toBe(200);
    const notice = mustTestId(other.text, "other-worker");
    expect(notice.attrs["data-worker"]).toBe("other-worker");
    expect(notice.text).toContain(`This console's binding for ${CLASS} points at another Worker`);
    expect(notice.text).toContain('the Worker "other-worker"');
    expect(mustTestId(other.text, "read-only").text).toContain(`this console's binding for ${CLASS} points at another Worker`);
    expect(actionPosts(other.text)).toEqual([]);

    // The bound agent: its page is as before, with its actions and no such notice.
    const mineText = (await getText(`/agents/${CLASS}/${enc(name)}`, "operator")).text;
    expect(mineText).not.toContain('data-testid="other-worker"');
    expect(actionPosts(mineText).length).toBeGreaterThan(0);

    // The admin client (reads, actions and reconciliation all go through it) refuses without calling any object.
    const admin = consoleAdminClient(env, { email: "operator@example.com", role: "operator" });
    const live = await admin.live({ agentClass: `${CLASS}@other-worker`, agentName: name });
    expect(live.ok ? null : [live.error.code, live.error.facts]).toEqual(["unsupported", { kind: "other_worker", agentClass: CLASS, worker: "other-worker" }]);
    const idle = await admin.forceIdle({ agentClass: `${CLASS}@other-worker`, agentName: name }, { reason: "testing identity" });
    expect(idle.ok ? null : idle.error.facts?.kind).toBe("other_worker");
  });

  it("keys what the other Worker's agent publishes on the admin package's channel like its SDK messages, in an invocation with nothing else", async () => {
    const name = `a-${uid()}`;
    const t = Date.now();
    const usage = (durableObjectId: string, scriptName: string | null, requestId: string): TailItem => ({
      scriptName,
      durableObjectId,
      eventTimestamp: t,
      truncated: false,
      diagnosticsChannelEvents: [
        {
          timestamp: t,
          channel: AGENT_CHANNEL,
          message: {
            v: AGENT_MESSAGE_VERSION,
            type: "model.usage",
            agent: CLASS,
            name,
            payload: { inputTokens: 10, outputTokens: 2, model: "m" },
            corr: { requestId },
            timestamp: t,
          },
        },
      ],
    });
    const r = await handleTail([usage(bound().idFromName(name).toString(), null, "req-mine"), usage(foreignId(), "other-worker", "req-theirs")], env as Env);
    expect(r).toMatchObject({ sent: 2, losses: 0 });
    const rows = await pollRows<{ agent_class: string; request_id: string }>(
      "SELECT agent_class, request_id FROM events WHERE agent_name = ? AND type = 'model.usage' ORDER BY request_id",
      [name],
      (rs) => rs.length === 2,
    );
    expect(rows.map((x) => [x.request_id, x.agent_class])).toEqual([
      ["req-mine", CLASS],
      ["req-theirs", `${CLASS}@other-worker`],
    ]);
  });

  it("locally, where the item names no Worker, keeps a foreign id apart too: one agent per object, none merged with the bound one", async () => {
    const name = `a-${uid()}`;
    const [x, y] = [foreignId(), foreignId()];
    const fibers = [`mine-${uid()}`, `x-${uid()}`, `y-${uid()}`];
    await handleTail(
      [
        runItem(name, fibers[0]!, { durableObjectId: bound().idFromName(name).toString(), scriptName: null }),
        runItem(name, fibers[1]!, { durableObjectId: x, scriptName: null }),
        runItem(name, fibers[2]!, { durableObjectId: y, scriptName: null }),
      ],
      env as Env,
    );
    const keyX = `${CLASS}@?${x.slice(0, 12)}`;
    const keyY = `${CLASS}@?${y.slice(0, 12)}`;
    expect((await agentsNamed(name, 3)).map((r) => r.agent_class)).toEqual([CLASS, keyX, keyY].sort());

    const page = await getText(`/agents/${enc(keyX)}/${enc(name)}`, "operator");
    expect(page.status).toBe(200);
    const notice = mustTestId(page.text, "other-worker");
    expect(notice.attrs["data-worker"]).toBe("");
    expect(notice.text).toContain("Parent unknown, or another Worker's agent.");
    expect(notice.text).toContain("The trace item names no Worker (local dev)");
    // What the parent search tried, as for any object it could not place.
    expect(notice.text).toContain("so it is a sub-agent");
    expect(actionPosts(page.text)).toEqual([]);

    // Another isolate reads the finding back from tail_objects: the same key, and no candidate tried again.
    forgetFacetFindings();
    const x2 = `x2-${uid()}`;
    const again = await handleTail([runItem(name, x2, { durableObjectId: x, scriptName: null })], env as Env);
    expect(again.parentsTried).toBe(0);
    const later = await pollRunRows<{ agent_class: string; fiber_id: string; outcome: string | null }>(
      name,
      (r) => r.fiber_id === x2,
      (rs) => rs.length === 1 && rs[0]!.outcome === "completed",
    );
    expect(later.map((r) => r.agent_class)).toEqual([keyX]);
    expect((await agentsNamed(name, 3)).map((r) => r.agent_class)).toEqual([CLASS, keyX, keyY].sort());
  });

  it("keys an agent of a class the console does not bind by its Worker where the item names one, and leaves it as it is locally", async () => {
    const name = `u-${uid()}`;
    const t = Date.now();
    const item = (scriptName: string | null, fiberId: string): TailItem => ({
      scriptName,
      durableObjectId: foreignId(),
      eventTimestamp: t,
      truncated: false,
      diagnosticsChannelEvents: [
        {
          timestamp: t,
          channel: "agents:fiber",
          message: { type: "fiber:run:started", agent: "UnboundTailed", name, timestamp: t, payload: { fiberId, fiberName: "f" } },
        },
      ],
    });
    await handleTail([item("worker-b", `b-${uid()}`), item(null, `l-${uid()}`)], env as Env);
    expect((await agentsNamed(name, 2)).map((r) => r.agent_class)).toEqual(["UnboundTailed", "UnboundTailed@worker-b"]);
    // Its page names the Worker and says the console binds no such class: nothing is offered.
    const page = await getText(`/agents/${enc("UnboundTailed@worker-b")}/${enc(name)}`, "operator");
    expect(mustTestId(page.text, "other-worker").text).toContain("The console binds no UnboundTailed (AGENT_CLASSES)");
    expect(mustTestId(page.text, "read-only").text).toContain("UnboundTailed is not an agent class this Worker may address");
    expect(actionPosts(page.text)).toEqual([]);
  });
});
