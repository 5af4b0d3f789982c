import { beforeAll, expect, it } from "vitest";
import { publishEnvTeamKeys } from "../access-tokens";
import { call } from "./harness";

beforeAll(() => publishEnvTeamKeys());

it("old /fibers links land on /runs with their filters and run id kept", async () => {
  const list = await call("/fibers?outcome=failed&agentClass=ProbeAgent", { as: "viewer", redirect: "manual" });
  expect(list.status).toBe(301);
  expect(list.headers.get("location")).toBe("/runs?outcome=failed&agentClass=ProbeAgent");

  const one = await call("/fibers/f%2F1?agentClass=ProbeAgent&agentName=a", { as: "viewer", redirect: "manual" });
  expect(one.status).toBe(301);
  expect(one.headers.get("location")).toBe("/runs/f%2F1?agentClass=ProbeAgent&agentName=a");

  // Followed, as a browser does, they land on the runs list itself.
  const landed = await call("/fibers?outcome=failed&agentClass=ProbeAgent", { as: "viewer", headers: { accept: "application/json" } });
  expect(landed.status).toBe(200);
  expect(Array.isArray(((await landed.json()) as { items: unknown[] }).items)).toBe(true);
});
