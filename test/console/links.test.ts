import { describe, expect, it } from "vitest";
import {
  agentHref,
  agentRunHref,
  batchHref,
  href,
  incidentHref,
  LISTS,
  listHref,
  runHref,
  searchMatchHref,
  sessionHref,
  stuckSubjectHref,
} from "../../console/links";

// Every console URL comes from console/links.ts (scripts/check-rooms.ts refuses one built elsewhere). These are the
// links users follow, bookmark and receive in alerts: ids are encoded, and detail links name their agent.

const owner = { agentClass: "Session Agent", agentName: "tenant/a?b" };
const params = (u: string) => Object.fromEntries(new URL(u, "https://console.test").searchParams);
const pathOf = (u: string) => new URL(u, "https://console.test").pathname;

describe("console links", () => {
  it("put filters in the query and leave unset ones out", () => {
    expect(listHref("runs", { outcome: "running", kind: undefined, agentName: "", confirmed: null })).toBe("/runs?outcome=running");
    expect(listHref("stuck")).toBe(LISTS.stuck);
    expect(href("/runs/x", { cursor: "c1" })).toBe("/runs/x?cursor=c1");
  });

  it("encode ids and name the owning agent on detail pages", () => {
    for (const [u, path] of [
      [runHref("run/1 #2", owner), "/runs/run%2F1%20%232"],
      [incidentHref("fiber:Session Agent/tenant/x", owner), `/incidents/${encodeURIComponent("fiber:Session Agent/tenant/x")}`],
      [sessionHref("s 1", owner), "/sessions/s%201"],
    ] as const) {
      expect(pathOf(u)).toBe(path);
      expect(params(u)).toEqual({ agentClass: owner.agentClass, agentName: owner.agentName });
    }
    expect(runHref("r1")).toBe("/runs/r1");
  });

  it("build an agent's page, its parts and its fragment", () => {
    expect(decodeURIComponent(pathOf(agentHref(owner)).split("/")[3]!)).toBe(owner.agentName);
    expect(agentHref(owner, "/live")).toBe(`${agentHref(owner)}/live`);
    expect(agentHref(owner, "", "admin-actions")).toBe(`${agentHref(owner)}#admin-actions`);
    expect(agentRunHref(owner, "a/b")).toBe(`${agentHref(owner)}/runs/a%2Fb`);
    expect(batchHref("b1", "/progress")).toBe("/bulk/batches/b1/progress");
  });

  it("send a stuck finding and a search match to their subject's page", () => {
    expect(stuckSubjectHref({ ...owner, subjectKind: "run", subjectId: "r1" })).toBe(runHref("r1", owner));
    expect(stuckSubjectHref({ ...owner, subjectKind: "incident", subjectId: "i1" })).toBe(incidentHref("i1", owner));
    expect(stuckSubjectHref({ ...owner, subjectKind: "session", subjectId: "s1" })).toBe(sessionHref("s1", owner));
    expect(stuckSubjectHref({ ...owner, subjectKind: "agent", subjectId: "x" })).toBe(agentHref(owner));
    expect(searchMatchHref({ ...owner, kind: "op", id: "op1", sessionName: "s1" })).toBe(sessionHref("s1", owner));
    expect(searchMatchHref({ ...owner, kind: "op", id: "op1", sessionName: null })).toBe(agentHref(owner));
  });
});
