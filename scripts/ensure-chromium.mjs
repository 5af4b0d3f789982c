// Browser tests drive Debian's Chromium through playwright-core (no browser downloads are possible here).
// Installs it when missing; needs root, as on CI and developer machines of this kind.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

const CHROMIUM = "/usr/bin/chromium";
if (existsSync(CHROMIUM)) {
  console.log(`✓ ${CHROMIUM} present`);
} else {
  console.log("• installing Debian chromium for the browser tests (apt-get)…");
  const run = (args) => execFileSync("apt-get", args, { stdio: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  try {
    run(["update"]);
    run(["install", "-y", "--no-install-recommends", "chromium"]);
  } catch (e) {
    console.error(`✖ could not install chromium (${e.message}). Install it with: apt-get install -y --no-install-recommends chromium`);
    process.exit(1);
  }
}
