import { describe, expect, it } from "vitest";
import { DevArgsError, inspectorPortFor, parseDevArgs } from "../../scripts/dev-args.ts";

describe("dev stack command line (npm start / npm run dev:with)", () => {
  it("parses its own options and passes every other argument to wrangler dev in order", () => {
    const a = parseDevArgs(["--inspector-port", "9330", "--port=8800", "--log-level", "debug", "--app", "x/wrangler.jsonc", "--var", "A=b=c", "--live-reload"]);
    expect(a).toMatchObject({ inspectorPort: 9330, port: 8800, app: "x/wrangler.jsonc", vars: { A: "b=c" }, demo: false });
    expect(a.wranglerArgs).toEqual(["--log-level", "debug", "--live-reload"]);
  });

  it("hands everything after a bare -- to wrangler dev, even the stack's own option names", () => {
    const a = parseDevArgs(["--demo", "--", "--port", "1", "--inspector-port", "2"]);
    expect(a.demo).toBe(true);
    expect(a.port).toBeUndefined();
    expect(a.inspectorPort).toBeUndefined();
    expect(a.wranglerArgs).toEqual(["--port", "1", "--inspector-port", "2"]);
  });

  it("refuses a bad port, a missing value and the options the stack owns with a sentence", () => {
    expect(() => parseDevArgs(["--inspector-port", "ninety"])).toThrow(DevArgsError);
    expect(() => parseDevArgs(["--inspector-port", "70000"])).toThrow(/port number/);
    expect(() => parseDevArgs(["--port"])).toThrow(/needs a value/);
    expect(() => parseDevArgs(["--var", "NOEQUALS"])).toThrow(/KEY=VALUE/);
    expect(() => parseDevArgs(["-c", "other.jsonc"])).toThrow(/set by the dev stack/);
    expect(() => parseDevArgs(["--ip=0.0.0.0"])).toThrow(/set by the dev stack/);
  });

  it("takes the inspector port from the command line, else from the user's own config's dev.inspector_port", () => {
    expect(inspectorPortFor({ inspectorPort: 9400 }, { dev: { inspector_port: 9500 } })).toBe(9400);
    expect(inspectorPortFor({}, { dev: { inspector_port: 9500 } })).toBe(9500);
    expect(inspectorPortFor({}, { dev: { port: 8787 } })).toBeUndefined();
    expect(inspectorPortFor({}, {})).toBeUndefined();
    expect(inspectorPortFor({}, { dev: { inspector_port: "9229" } })).toBeUndefined();
  });
});
