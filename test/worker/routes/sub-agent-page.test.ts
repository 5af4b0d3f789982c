import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../../worker/env";
import { handleTail } from "../../../worker/tail";
import { listenLikeATail } from "../../diagnostics-tail";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { findAll, mustTestId } from "../html";
import { getText, uid } from "./harness";

// A sub-agent's page says whose it is, links to the parent where the console has the parent's page, and offers
// actions only where they reach the sub-agent (through its parent); a sub-agent of a sub-agent gets none, with why.

const enc = encodeURIComponent;
const actionPosts = (html: string) => findAll(html, "hx-post").filter((f) => f.attrs["hx-post"]!.startsWith("/actions/"));
const tail = listenLikeATail();
afterAll(() => tail.stop());
beforeAll(async () => {
  await publishEnvTeamKeys();
});

/** Sends what the tail heard through the console's tail handler, and waits for the agent to be registered. */
async function deliver(agentClass: string, agentName: string) {
  await handleTail([tail.item()], env as Env);
  tail.clear();
  await pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", [agentClass, agentName], (r) => r.length === 1);
}

describe("a sub-agent's page", () => {
  it("names its parent, links to the parent's page once the parent has one, and offers the actions that reach it", async () => {
    const parent = `hub-${uid()}`;
    const hub = await getAgentByName(env.SubAgentHub, parent);
    await hub.workInHelper("helper");
    const key = `SubAgentHub:${parent} › helper`;
    await deliver("SubAgentHelper", key);

    const before = await getText(`/agents/SubAgentHelper/${enc(key)}`, "operator");
    expect(before.status).toBe(200);
    expect(mustTestId(before.text, "sub-agent-of").text).toBe(
      `A sub-agent of SubAgentHub "${parent}" (which has reported no events of its own, so it has no page here): the console reads it and acts on it through its parent.`,
    );
    // Reached through the parent: the live view answers, and force idle and trigger alarm are offered.
    expect(before.text).not.toContain('data-testid="read-only"');
    expect(actionPosts(before.text).map((f) => f.attrs["hx-post"])).toEqual(
      expect.arrayContaining([expect.stringContaining("force-idle"), expect.stringContaining("trigger-alarm")]),
    );

    // The parent reports work of its own: now it has a page, and the sub-agent's page links to it.
    await hub.ownWork();
    await deliver("SubAgentHub", parent);
    const after = await getText(`/agents/SubAgentHelper/${enc(key)}`, "operator");
    const line = mustTestId(after.text, "sub-agent-of");
    // (textOf puts a space where the link's closing tag was; the page itself has none.)
    expect(line.text.replace(" :", ":")).toBe(`A sub-agent of SubAgentHub "${parent}": the console reads it and acts on it through its parent.`);
    expect(findAll(line.html, "href").map((a) => a.attrs.href)).toEqual([`/agents/SubAgentHub/${enc(parent)}`]);
  });

  it("of a sub-agent offers no actions, and says why in one sentence", async () => {
    const root = `root-${uid()}`;
    const key = `SubAgentHub:${root} › SubAgentHelper:mid › leaf`;
    const t = Date.now();
    // As the admin mixin publishes a leaf's message: the SDK's own fields and its ancestry.
    const message = {
      type: "fiber:run:started",
      agent: "SubAgentHelper",
      name: "leaf",
      timestamp: t,
      payload: { fiberId: `leaf-${uid()}`, fiberName: "leaf-job", managed: false },
      parentPath: [
        { className: "SubAgentHub", name: root },
        { className: "SubAgentHelper", name: "mid" },
      ],
    };
    await handleTail(
      [
        {
          scriptName: null,
          durableObjectId: uid(),
          eventTimestamp: t,
          truncated: false,
          diagnosticsChannelEvents: [{ timestamp: t, channel: "agents:fiber", message }],
        },
      ],
      env as Env,
    );
    await pollRows("SELECT 1 FROM agents WHERE agent_class = 'SubAgentHelper' AND agent_name = ?", [key], (r) => r.length === 1);
    const page = await getText(`/agents/SubAgentHelper/${enc(key)}`, "operator");
    expect(page.status).toBe(200);
    expect(mustTestId(page.text, "sub-agent-of").text).toContain(`A sub-agent of SubAgentHelper "SubAgentHub:${root} › mid"`);
    expect(mustTestId(page.text, "read-only").text).toBe(
      "No actions are offered: this SubAgentHelper is a sub-agent 2 levels down: the agents SDK lets the console reach only a top-level agent's own sub-agents, so it cannot be asked or acted on.",
    );
    expect(actionPosts(page.text)).toEqual([]);
  });
});
