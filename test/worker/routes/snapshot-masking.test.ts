import { env } from "cloudflare:workers";
import { Telemetry } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, mustTestId } from "../html";
import { getText, uid } from "./harness";

const SECRETS = {
  password: "hunter2hunter2",
  github: "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngXyZ12345",
  jwt: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvcHMifQ.c2lnbmF0dXJlLXZhbHVlLWhlcmU",
  url: "https://deploy:Pg5ecret99@git.example.com/repo",
};
const FRAGMENTS = ["hunter2", "R4nd0mT0k3n", "eyJzdWIiOiJvcHMifQ", "Pg5ecret99"];

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("the snapshot viewer", () => {
  it("shows a viewer the live snapshot with its secrets masked, from the agent page's link", async () => {
    const name = `snap-${uid()}`;
    const stub = await getAgentByName(env.ProbeAgent, name);
    await stub.startHangingFiber(undefined, "probe-hang", {
      step: 2,
      password: SECRETS.password,
      notes: [`push with ${SECRETS.github}`, `auth ${SECRETS.jwt}`],
      remote: SECRETS.url,
    });
    await pollRows("SELECT 1 FROM agents WHERE agent_class = 'ProbeAgent' AND agent_name = ?", [name], (r) => r.length === 1);
    const runId = (await stub.runRows())[0]!.id;

    const agentPage = await getText(`/agents/ProbeAgent/${name}`, "viewer");
    expect(agentPage.status).toBe(200);
    expect(agentPage.text).toContain(`/agents/ProbeAgent/${name}/runs/${runId}`);

    const page = await getText(`/agents/ProbeAgent/${name}/runs/${runId}`, "viewer");
    expect(page.status).toBe(200);
    expect(mustTestId(page.text, "snapshot").attrs["data-source"]).toBe("live");
    for (const marker of ["[masked: password]", "[masked: github token]", "[masked: jwt]", "https://[masked: url credentials]@git.example.com/repo"])
      expect(page.text).toContain(marker);
    for (const f of FRAGMENTS) expect(page.text).not.toContain(f);
    expect(byTestId(page.text, "masked-note")).toBeDefined();
  });

  it("masks a last-known snapshot stored unmasked by an agent on an older package", async () => {
    const name = `old-${uid()}`;
    const fiberId = `fiber-${uid()}`;
    // An older agent: its stash preview reached the Queue without masking.
    const old = new Telemetry({ source: { agentClass: "ProbeAgent", agentName: name }, queue: env.TELEMETRY_QUEUE });
    const raw = JSON.stringify({ token: SECRETS.github, remote: SECRETS.url });
    old.record("fiber.stashed", { fiberName: "legacy", snapshot: { preview: raw, bytes: raw.length, truncated: false } }, { fiberId });
    await old.settle();
    await pollRows("SELECT 1 FROM runs WHERE fiber_id = ? AND snapshot_preview IS NOT NULL", [fiberId], (r) => r.length === 1);

    const page = await getText(`/agents/ProbeAgent/${name}/runs/${fiberId}`, "viewer");
    expect(page.status).toBe(200);
    expect(mustTestId(page.text, "snapshot").attrs["data-source"]).toBe("last_known");
    expect(byTestId(page.text, "masked-note")).toBeDefined();
    expect(page.text).toContain("[masked: github token]");
    expect(page.text).toContain("[masked: url credentials]");
    for (const f of FRAGMENTS) expect(page.text).not.toContain(f);
  });
});
