// Entry for `npm start`, `npm test` and `npm run bench` on a fresh clone: installs what is missing, then hands over
// to the real script. Plain Node (it may run on the machine's Node 20 before the Node 22 package exists).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";

// Without a target it only installs: package.json runs it so as the `pre` hook of every documented script that
// needs the dependencies (`npm run build:packages`, `dev:with`, `db:*`, …), so each works on a fresh clone as written.
const target = process.argv[2];

const run = (cmd, args, opts = {}) => {
  const r = spawnSync(cmd, args, { stdio: "inherit", ...opts });
  if (r.status !== 0) {
    console.error(`\n✖ ${cmd} ${args.join(" ")} failed (exit ${r.status ?? r.signal}).`);
    process.exit(r.status ?? 1);
  }
};

// 1. Dependencies, reinstalled whenever package-lock.json changes (the stamp is written after install).
const stamp = "node_modules/.install-stamp";
const lockHash = () => createHash("sha256").update(readFileSync("package-lock.json")).digest("hex");
if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== lockHash()) {
  // `npm ci`: exactly the committed lock, so CI and every user install the same tree (`npm install` may rewrite it).
  console.log("• installing dependencies (npm ci)…");
  run("npm", ["ci", "--no-audit", "--no-fund"]);
  writeFileSync(stamp, lockHash());
}

// 2. Hand over. `npm run` puts node_modules/.bin first on PATH, so the script runs on Node 22. Arguments after the
// target pass through (`npm start -- --inspector-port 9330 --port 8800` reaches dev-stack.ts).
if (!target) process.exit(0);
const rest = process.argv.slice(3);
run("npm", ["run", "--silent", target, ...(rest.length ? ["--", ...rest] : [])]);
