import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { writeAudit } from "../../../src/store/audit";
import { publishEnvTeamKeys } from "../access-tokens";
import { findAll } from "../html";
import { getText, uid } from "./harness";

// The audit keeps history as written: a row from before the admin package answered facts holds its notice as a
// sentence, a new row holds the facts. The audit page shows both, the old one as stored.

beforeAll(async () => {
  await publishEnvTeamKeys();
});

const row = (targetName: string, reason: string, after: unknown) => ({
  id: `audit-${uid()}`,
  time: Date.now(),
  actor: "ops@example.com",
  role: "operator",
  action: "force_idle" as const,
  targetClass: "ProbeAgent",
  targetName,
  reason,
  before: { status: "running", runCount: 1 },
  after,
  result: "partial" as const,
  error: null,
});

describe("the audit page's notices", () => {
  it("words a new row's facts and shows an old row's sentence as it was stored", async () => {
    const name = `notices-${uid()}`;
    const readAt = Date.now();
    await writeAudit(
      env.DB,
      row(name, "old row", {
        status: "running",
        runCount: 0,
        verified: true,
        readAt,
        checks: [],
        busy: [],
        notice: "Force idle did not stop everything: (as worded then).",
      }),
    );
    await writeAudit(
      env.DB,
      row(name, "new row", {
        status: "running",
        runCount: 0,
        verified: true,
        readAt,
        checks: [{ id: "fib-1", kind: "fiber", name: "export-orders", now: "running", sdkState: "running", source: "in_memory" }],
        busy: [],
        notice: { code: "still_runs" },
      }),
    );
    const page = await getText(`/audit?targetName=${encodeURIComponent(name)}`, "viewer");
    expect(page.status).toBe(200);
    const notices = findAll(page.text, "data-testid", "audit-notice").map((n) => n.text);
    expect(notices).toHaveLength(2);
    expect(notices).toContain("Force idle did not stop everything: (as worded then).");
    expect(notices.find((n) => n !== "Force idle did not stop everything: (as worded then).")).toMatch(/'export-orders' \(fib-1\)/);
  });
});
