import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { expect, it } from "vitest";

// What the telemetry outbox costs the agent in Durable Object rows written (billed to the customer), counted
// from the SQL cursors' own rowsWritten (stats().outboxRowsWritten). Driven on GapAgent (test/fixtures/gap-agent.ts).

const uid = () => crypto.randomUUID().slice(0, 8);

it("a turn's events cost one row written however many they are, and sending them costs none", async () => {
  const name = `cost-${uid()}`;
  const stub = await getAgentByName(env.GapAgent, name);
  await stub.work(1);
  const base = (await stub.settleTelemetry()).outboxRowsWritten;

  await stub.recordMany(20, name);
  const written = (await stub.settleTelemetry()).outboxRowsWritten;
  expect(written - base).toBe(1);

  // The next turn's write goes into the row whose events were sent (no delete, ever).
  await stub.recordMany(7, name);
  const after = await stub.settleTelemetry();
  expect(after.outboxRowsWritten - written).toBe(1);
  expect(after).toMatchObject({ pending: 0, sendErrors: 0 });
  expect((await stub.shipped()).length).toBe(3 + 20 + 7);
});
