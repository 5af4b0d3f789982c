import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";

// Runs inside the page (page.evaluate); the test project has no DOM types of its own.
declare const window: Record<string, unknown>;
declare const document: unknown;

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core"), "utf8");

export type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: string[]; failureSummary?: string }[] };

/** Runs axe-core on the page with the WCAG 2.0/2.1 A and AA rules and returns its violations. */
export async function axe(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the devtools protocol: the page's CSP (script-src 'self') stays on and still governs the page's own scripts.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const w = window as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: AxeViolation[] }> } };
    const r = await w.axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })),
    }));
  });
}

/** Violations as lines a person can act on: rule, what it asks, and each offending element. */
export function readable(violations: AxeViolation[]): string {
  return violations
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help}\n${v.nodes.map((n) => `    ${n.target.join(" ")} — ${(n.failureSummary ?? "").replace(/\s+/g, " ")}`).join("\n")}`,
    )
    .join("\n");
}
