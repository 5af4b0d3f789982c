import { beforeAll, describe, expect, it } from "vitest";
import { makeEvent } from "../../fixtures/events";
import { ingest } from "../../store/store-helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, findAll, mustTestId } from "../html";
import { call, getOverview, getText, uid } from "./harness";

// The console shows what recovery re-spent: on the incident (total, input, output, and per attempt), in the
// incident list, and on the overview (24 h). Events go in through the real ingest path.

const enc = encodeURIComponent;
const overviewTokens = async () =>
  ((await (await call("/", { as: "viewer", headers: { Accept: "application/json" } })).json()) as { counts: { respentTokens24h: number } }).counts
    .respentTokens24h;

let agentName: string;
let incidentId: string;
let before: number;

beforeAll(async () => {
  await publishEnvTeamKeys();
  agentName = `cost-${uid()}`;
  incidentId = `req-${uid()}:msg-1`;
  before = await overviewTokens();
  const now = Date.now() - 60_000;
  const base = { maxAttempts: 3, recoveryKind: "continue" as const };
  const corr = { incidentId, requestId: incidentId.split(":")[0] };
  let t = now;
  const at = () => ({ agentName, time: t++ });
  const r = await ingest([
    makeEvent("model.usage", { inputTokens: 5000, outputTokens: 500 }, { ...at(), corr: { requestId: corr.requestId } }),
    makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, { ...at(), corr }),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, { ...at(), corr }),
    makeEvent(
      "model.usage",
      { inputTokens: 1200, outputTokens: 34, attempt: 1, model: "scripted-chat" },
      { ...at(), corr: { incidentId, requestId: "cont-1" } },
    ),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 2 }, { ...at(), corr }),
    makeEvent(
      "model.usage",
      { inputTokens: 1300, outputTokens: 40, attempt: 2, model: "scripted-chat" },
      { ...at(), corr: { incidentId, requestId: "cont-2" } },
    ),
    makeEvent(
      "model.usage",
      { inputTokens: 200, outputTokens: 26, attempt: 2, model: "scripted-chat" },
      { ...at(), corr: { incidentId, requestId: "cont-2" } },
    ),
    makeEvent("chat.recovery.exhausted", { ...base, attempt: 2, reason: "max_attempts_exceeded" }, { ...at(), corr }),
  ]);
  expect(r).toMatchObject({ stored: 8, deadLettered: 0 });
});

describe("recovery cost in the console", () => {
  it("the incident page shows the re-spent tokens and each attempt's share", async () => {
    const page = await getText(`/incidents/${enc(incidentId)}`, "viewer");
    expect(page.status).toBe(200);
    expect(mustTestId(page.text, "incident-respent").attrs).toMatchObject({ "data-input": "2700", "data-output": "100" });
    expect(mustTestId(page.text, "respent-total").text).toBe("2,800");
    const table = /data-testid="respent-by-attempt">([\s\S]*?)<\/table>/.exec(page.text)![1]!;
    const rows = [...table.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].slice(1).map((m) => [...m[1]!.matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((c) => c[1]));
    expect(rows).toEqual([
      ["1", "1", "1,200", "34", "1,234"],
      ["2", "2", "1,500", "66", "1,566"],
    ]);
    // Each call on the timeline says what it spent.
    expect(findAll(page.text, "data-testid", "event-tokens").map((t) => t.attrs)).toContainEqual({
      "data-testid": "event-tokens",
      "data-input": "1200",
      "data-output": "34",
      "data-model": "scripted-chat",
    });
    const json = (await (await call(`/incidents/${enc(incidentId)}`, { as: "viewer", headers: { Accept: "application/json" } })).json()) as {
      incident: { respentInputTokens: number; respentOutputTokens: number };
    };
    expect(json.incident).toMatchObject({ respentInputTokens: 2700, respentOutputTokens: 100 });
  });

  it("an incident whose agent reported no usage says so", async () => {
    const other = `req-${uid()}:msg-1`;
    await ingest([
      makeEvent(
        "chat.recovery.attempt",
        { attempt: 1, maxAttempts: 3, recoveryKind: "retry" },
        { agentName, time: Date.now() - 1000, corr: { incidentId: other } },
      ),
    ]);
    const page = await getText(`/incidents/${enc(other)}`, "viewer");
    expect(mustTestId(page.text, "incident-respent").attrs).toMatchObject({ "data-input": "0", "data-output": "0" });
    expect(byTestId(page.text, "respent-total")).toBeUndefined();
    expect(byTestId(page.text, "respent-by-attempt")).toBeUndefined();
  });

  it("the incident list has a tokens column", async () => {
    const page = await getText(`/incidents?agentName=${enc(agentName)}&status=exhausted`, "viewer");
    expect(findAll(page.text, "data-testid", "incident-tokens").map((t) => t.attrs["data-tokens"])).toEqual(["2800"]);
  });

  it("the overview sums tokens re-spent by recovery over 24 h", async () => {
    expect((await overviewTokens()) - before).toBe(2800);
    const page = await getOverview("viewer");
    const card = /data-testid="count-Tokens re-spent by recovery \(24 h\)"[^>]*>([\s\S]*?)<\/a>/.exec(page.text)![1]!;
    // Shown as people read it (console/format.ts count): 2,800.
    expect(Number(/<div class="n">(\d{1,3}(?:,\d{3})*)<\/div>/.exec(card)![1]!.replace(/,/g, ""))).toBeGreaterThanOrEqual(2800);
  });
});
