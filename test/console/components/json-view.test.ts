import { jsx } from "hono/jsx";
import { describe, expect, it } from "vitest";
import { DEEPER_MARKER, JSON_LIMITS, JsonView, parsePreview } from "../../../console/components/json-view";

// The JSON viewer draws any stored value: however deep, wide or long, it renders quickly, says what it
// left out, and shows markup as text.

async function render(props: Parameters<typeof JsonView>[0]): Promise<string> {
  return String(await jsx(JsonView, props).toString());
}

/** [[[…1…]]] nested `depth` times, as an object and as the text a snapshot preview holds. */
function deep(depth: number) {
  let v: unknown = "bottom";
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { k: v };
  return v;
}

describe("depth", () => {
  it("draws a 10,000-deep value down to the cap, then says deeper levels are not shown", async () => {
    const html = await render({ value: deep(10_000) });
    expect(html).toContain(DEEPER_MARKER);
    expect(html.match(/<details/g)).toHaveLength(JSON_LIMITS.maxDepth);
    expect(html).not.toContain("bottom");
  });

  it("draws the same from a 10,000-deep preview string (parsed, not recursed without bound)", async () => {
    const text = "[".repeat(10_000) + "]".repeat(10_000);
    const { value, rawText } = parsePreview(text);
    const html = await render({ value, rawText, size: text.length });
    expect(html).toContain(DEEPER_MARKER);
    expect(html).toContain("19.5 KB");
  });

  it("draws a shallow value completely, with no marker", async () => {
    const html = await render({ value: { step: 3, items: ["a", "b"], done: false, none: null } });
    expect(html).not.toContain(DEEPER_MARKER);
    expect(html).not.toContain('class="j-more"');
    for (const s of ["step", "&quot;a&quot;", "&quot;b&quot;", "false", "null"]) expect(html).toContain(s);
  });

  it("honours a smaller depth given by the caller", async () => {
    const html = await render({ value: deep(5), limits: { maxDepth: 2 } });
    expect(html.match(/<details/g)).toHaveLength(2);
    expect(html).toContain(DEEPER_MARKER);
  });
});

describe("size", () => {
  it("draws at most maxEntries of a wide array and says how many more there are", async () => {
    const html = await render({ value: Array.from({ length: 1000 }, (_, i) => i) });
    expect(html).toContain(`<span class="j-more" data-hidden="${1000 - JSON_LIMITS.maxEntries}">`);
    expect(html.match(/<li>/g)!.length).toBe(JSON_LIMITS.maxEntries + 1);
  });

  it("stops at maxNodes values in total and says the display limit was reached", async () => {
    const wide = Array.from({ length: 100 }, () => Array.from({ length: 100 }, (_, i) => i));
    const html = await render({ value: wide });
    expect(html).toContain(`data-testid="json-cut" data-max-nodes="${JSON_LIMITS.maxNodes}"`);
    expect(html.match(/class="j-lit"/g)!.length).toBeLessThanOrEqual(JSON_LIMITS.maxNodes);
  });

  it("cuts a long string and says by how much", async () => {
    const html = await render({ value: { note: "x".repeat(JSON_LIMITS.maxChars + 50) } });
    expect(html).toContain("… (50 more characters)");
    expect(html).not.toContain("x".repeat(JSON_LIMITS.maxChars + 1));
  });

  it("shows text that is not JSON as text, cut at a size", async () => {
    const { value, rawText } = parsePreview(`not json ${"y".repeat(200_000)}`);
    const html = await render({ value, rawText });
    expect(html).toContain('<pre class="json-raw">not json');
    expect(html).toContain("more characters)");
    expect(html.length).toBeLessThan(150_000);
  });
});

it("shows markup in keys and values as text", async () => {
  const html = await render({ value: { "<b>key</b>": "<script>alert(1)</script>" } });
  expect(html).not.toContain("<script>");
  expect(html).not.toContain("<b>");
  expect(html).toContain("&lt;b&gt;key&lt;/b&gt;");
  expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
});
