// Fails when src/store/schema.ts has changes that migrations/ does not: the schema is the
// single source of table shapes, and a forgotten `npm run db:generate` must not reach main.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, rmSync } from "node:fs";

// drizzle-kit resolves --out relative to the project, so the scratch copy lives inside it (gitignored).
const scratch = ".wrangler/migrations-check";
rmSync(scratch, { recursive: true, force: true });
mkdirSync(".wrangler", { recursive: true });
cpSync("migrations", scratch, { recursive: true });
const r = spawnSync("npx", ["drizzle-kit", "generate", "--dialect", "sqlite", "--schema", "./src/store/schema.ts", "--out", scratch], { encoding: "utf8" });
const before = readdirSync("migrations").filter((f) => f.endsWith(".sql")).length;
const after = readdirSync(scratch).filter((f) => f.endsWith(".sql")).length;
rmSync(scratch, { recursive: true, force: true });
if (r.status !== 0) {
  console.error(r.stdout, r.stderr);
  process.exit(r.status ?? 1);
}
if (after !== before) {
  console.error("✖ src/store/schema.ts has changes with no migration. Run `npm run db:generate` and commit migrations/.");
  process.exit(1);
}
console.log("✓ migrations match the drizzle schema");
