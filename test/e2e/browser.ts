import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, chromium, type Locator, type Page } from "playwright-core";

/** Where screenshots go; CI keeps them as test artifacts. */
export const ARTIFACTS = path.resolve(import.meta.dirname, "../../test-artifacts");

/** Debian's Chromium, headless, with the flags this machine needs (no background networking). */
export async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/** Saves a full-page screenshot under test-artifacts/ and returns its path. */
export async function shot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Clicks that count themselves: the browser tests measure how many clicks a task takes from the overview. */
export function clickCounter(): { click(l: Locator): Promise<void>; readonly count: number; reset(): void } {
  let n = 0;
  return {
    async click(l) {
      await l.click();
      n++;
    },
    get count() {
      return n;
    },
    reset() {
      n = 0;
    },
  };
}
