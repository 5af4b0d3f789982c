import { agentKeyName, normalizeSdkEvent, parseAgentKeyName, parseEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";

/** A sub-agent's SDK message as the admin mixin passes it on: the SDK's own fields, plus its `parentPath`. */
const T = 1_796_000_000_000;
const started = (name: string, parentPath?: unknown) => ({
  type: "fiber:run:started",
  agent: "Helper",
  name,
  payload: { fiberId: "f1", fiberName: "job", managed: false },
  timestamp: T,
  ...(parentPath === undefined ? {} : { parentPath }),
});

describe("sub-agent identity", () => {
  it("keys a top-level agent by its name, unchanged, and carries no ancestry", () => {
    const e = normalizeSdkEvent(started("acme"))!;
    expect(e.source).toEqual({ agentClass: "Helper", agentName: "acme" });
    expect(parseAgentKeyName("acme")).toBeNull();
  });

  it("keys a sub-agent by its ancestry and name, so two parents' same-named helpers are two agents", () => {
    const a = normalizeSdkEvent(started("helper", [{ className: "Hub", name: "north" }]))!;
    const b = normalizeSdkEvent(started("helper", [{ className: "Hub", name: "south" }]))!;
    expect(a.source).toEqual({ agentClass: "Helper", agentName: "Hub:north › helper", parentPath: [{ className: "Hub", name: "north" }] });
    expect(b.source.agentName).toBe("Hub:south › helper");
    // The contract takes the ancestry as it is.
    expect(parseEvent(a)).toMatchObject({ ok: true });
  });

  it("reads a key name back to the ancestry, whatever the ancestors' names hold", () => {
    const path = [
      { className: "Tenant", name: "acme corp › eu" },
      { className: "Inbox", name: "alice:100%" },
    ];
    const key = agentKeyName("chat › 1", path);
    expect(key).toBe("Tenant:acme%20corp%20%E2%80%BA%20eu › Inbox:alice%3A100%25 › chat › 1");
    expect(parseAgentKeyName(key)).toEqual({ parentPath: path, name: "chat › 1" });
  });

  it("ignores an ancestry that is not the SDK's shape, keying the agent by its name", () => {
    for (const bad of [[], "Hub/north", [{ className: "Hub" }], [{ className: "not a class", name: "x" }], Array(9).fill({ className: "A", name: "a" })]) {
      expect(normalizeSdkEvent(started("helper", bad))!.source).toEqual({ agentClass: "Helper", agentName: "helper" });
    }
  });
});
