import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Timeline } from "../../../console/components/timeline";
import type { EventRow } from "../../../src/store/read-models";
import { app as consoleWorkerApp } from "../../../worker/app";
import { type AuthEnv, auth, readTraceLinkSetting } from "../../../worker/auth";
import { pageContext } from "../../../worker/routes/context";
import { hrefs } from "../html";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const event: EventRow = {
  id: "e1",
  time: Date.UTC(2026, 0, 2, 3, 4, 5),
  type: "fiber.failed",
  agentClass: "DemoFiberAgent",
  agentName: "a1",
  fiberId: "f1",
  incidentId: null,
  requestId: null,
  opId: null,
  sessionName: null,
  taskId: null,
  traceId: TRACE_ID,
  spanId: "00f067aa0ba902b7",
  payload: {},
};

/** The console's page context (worker/routes/context.ts) and a real timeline rendered with it, for a given APM_TRACE_URL. */
async function timelineWith(apmTraceUrl: string | undefined): Promise<{ traceUrl: string | null; html: string }> {
  const app = new Hono<AuthEnv>();
  app.use(auth({ bindings: { AUTH_MODE: "dev" } }));
  app.get("/", (c) => {
    const { traceUrl } = pageContext(c);
    c.header("X-Trace-Url", JSON.stringify(traceUrl));
    return c.html(Timeline({ events: [event], traceUrl }));
  });
  const res = await app.request("http://127.0.0.1:8787/", {}, { ...env, APM_TRACE_URL: apmTraceUrl });
  expect(res.status).toBe(200);
  return { traceUrl: JSON.parse(res.headers.get("X-Trace-Url")!) as string | null, html: await res.text() };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("APM_TRACE_URL", () => {
  it("links trace ids to an http(s) APM", async () => {
    const { traceUrl, html } = await timelineWith("https://apm.example.com/trace/{traceId}?env=prod");
    expect(traceUrl).toBe("https://apm.example.com/trace/{traceId}?env=prod");
    expect(hrefs(html)).toContain(`https://apm.example.com/trace/${TRACE_ID}?env=prod`);
    expect(readTraceLinkSetting("http://127.0.0.1:16686/trace/{traceId}")).toEqual({ template: "http://127.0.0.1:16686/trace/{traceId}", warning: null });
  });

  it("refuses javascript:alert(1) (worker/config.ts): the console renders nothing with it, and the operator's log says why", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    for (const raw of ["javascript:alert(1)//{traceId}", "javascript:alert(1)"]) {
      const res = await consoleWorkerApp.request("http://127.0.0.1:8787/health", {}, { ...env, APM_TRACE_URL: raw });
      expect(res.status, raw).toBe(503);
      expect(await res.text()).not.toContain("javascript:");
    }
    expect(logged.mock.calls.map((a) => a.join(" "))).toContainEqual(
      expect.stringContaining('APM_TRACE_URL="javascript:alert(1)//{traceId}" must be an http(s) URL containing {traceId}'),
    );
  });

  it("refuses other schemes, control characters, credentials and templates without {traceId}", () => {
    const ignored = (raw: string) => readTraceLinkSetting(raw);
    expect(ignored("javascript:alert(1)")).toEqual({ template: null, warning: expect.stringContaining("has no {traceId} placeholder") });
    expect(ignored("JavaScript:alert('{traceId}')")).toEqual({ template: null, warning: expect.stringContaining("is a javascript: URL") });
    expect(ignored("data:text/html,<script>alert(1)</script>{traceId}")).toMatchObject({ template: null, warning: expect.stringContaining("is a data: URL") });
    expect(ignored("java\tscript:alert(1)//{traceId}")).toMatchObject({ template: null, warning: expect.stringContaining("control characters") });
    expect(ignored("\u0001javascript:alert(1)//{traceId}")).toMatchObject({ template: null });
    expect(ignored("https://user:pw@apm.example.com/{traceId}")).toMatchObject({ template: null, warning: expect.stringContaining("user name or password") });
    expect(ignored("/relative/{traceId}")).toMatchObject({ template: null, warning: expect.stringContaining("is not a URL") });
    expect(ignored("https://apm.example.com/traces")).toMatchObject({ template: null, warning: expect.stringContaining("no {traceId}") });
    expect(ignored("   ")).toEqual({ template: null, warning: null });
  });
});
