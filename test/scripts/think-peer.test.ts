import { describe, expect, it } from "vitest";
import { thinkPeerProblem } from "../../scripts/think-peer.ts";

describe("Think's build-time dependency", () => {
  it("says to install just-bash when the Worker depends on Think without it, and nothing otherwise", () => {
    const missing = thinkPeerProblem({ "@cloudflare/think": "0.23.0", agents: "0.32.0" }, () => false, "/w");
    expect(missing).toMatch(/npm install just-bash/);
    expect(missing).toContain("/w");
    expect(thinkPeerProblem({ "@cloudflare/think": "0.23.0" }, (n) => n === "just-bash", "/w")).toBeNull();
    expect(thinkPeerProblem({ agents: "0.32.0" }, () => false, "/w")).toBeNull();
  });
});
