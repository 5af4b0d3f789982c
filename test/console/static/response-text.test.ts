import { describe, expect, it } from "vitest";
// The very file the browser loads (console/static/response-text.js): it sets globalThis.consoleResponses.
import "../../../console/static/response-text.js";

type Responses = { swappableBody(status: number, contentType: string | null, body: unknown): string };
const { swappableBody } = (globalThis as unknown as { consoleResponses: Responses }).consoleResponses;

// What htmx may put into a page: our own escaped HTML fragments as they are, anything else as text.

describe("swappableBody", () => {
  it("keeps the console's own HTML fragments", () => {
    const fragment = '<div class="result bad" data-testid="action-result"><strong>Force idle refused:</strong> no agent &lt;b&gt;</div>';
    expect(swappableBody(404, "text/html; charset=UTF-8", fragment)).toBe(fragment);
  });

  it("shows a plain-text error (from auth, the platform or our 500) as text, never as markup", () => {
    const out = swappableBody(403, "text/plain; charset=UTF-8", 'This change was refused because it was sent from <img src=x onerror="alert(1)">.');
    expect(out).toBe(
      '<p class="error-message" role="alert">This change was refused because it was sent from &lt;img src=x onerror=&quot;alert(1)&quot;&gt;.</p>',
    );
  });

  it("shows JSON and bodies without a type as text", () => {
    expect(swappableBody(400, "application/json", '{"error":"<x>"}')).toBe(
      '<p class="error-message" role="alert">{&quot;error&quot;:&quot;&lt;x&gt;&quot;}</p>',
    );
    expect(swappableBody(502, null, "<h1>Bad gateway</h1>")).toBe('<p class="error-message" role="alert">&lt;h1&gt;Bad gateway&lt;/h1&gt;</p>');
  });

  it("does not swap in a whole HTML page (a proxy's error page): it says what failed instead", () => {
    const page = "<!DOCTYPE html><html><head><script>steal()</script></head><body>502</body></html>";
    expect(swappableBody(502, "text/html", page)).toBe('<p class="error-message" role="alert">The request failed (HTTP 502).</p>');
  });

  it("says what failed when an error has no body", () => {
    expect(swappableBody(504, "text/plain", "")).toBe('<p class="error-message" role="alert">The request failed (HTTP 504).</p>');
  });
});
