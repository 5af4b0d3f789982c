// `npm run bench`, part 1 (Node): bundle sizes as wrangler builds them for deploy (minified, gzip level 9 as a
// proxy for the upload's compression). Reports the console Worker's size and what the agent-side packages add
// to a user's Worker: the same plain agent bundled with and without withTelemetry + withAdminRpc, and with each
// package alone (the admin package with its publishing helper, against its 8 KB gz target; the opt-in outbox).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { generatedDir, repoRoot } from "../scripts/wrangler-config.ts";
import { bundleWorker } from "./bundle.ts";

const KB = 1024;
const workDir = path.join(generatedDir, "bundle-bench");

type Bundle = { raw: number; gz: number; meta: string };

/** A Worker bundled as `wrangler deploy` would (bundle.ts), with the path of esbuild's metafile (which input paid how many bytes). */
function bundle(config: string, label: string): Bundle {
  const meta = path.join(workDir, `meta-${label}.json`);
  return { ...bundleWorker(config, path.join(workDir, `out-${label}`), meta), meta };
}

/** The packages' own modules in a bundle, largest first, with the minified bytes each put in the output. */
function packageModules(b: Bundle): { file: string; bytes: number }[] {
  const meta = JSON.parse(readFileSync(b.meta, "utf8")) as { outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }> };
  const out: { file: string; bytes: number }[] = [];
  for (const o of Object.values(meta.outputs)) {
    for (const [file, v] of Object.entries(o.inputs)) {
      const m = /src\/(telemetry|admin-rpc)\/(?:dist\/)?([^/]+)$/.exec(file);
      if (m && v.bytesInOutput > 0) out.push({ file: `${m[1]}/${m[2]}`, bytes: v.bytesInOutput });
    }
  }
  return out.sort((x, y) => y.bytes - x.bytes);
}

/**
 * A user's Worker with one agent doing runFiber + stash; `mixins` adds our packages, imported by package name, and
 * "otlp" also OTLP span export (the `@agent-oncall/telemetry/otlp` entry, which brings the OpenTelemetry SDK).
 */
function userWorker(label: string, mixins: false | "queue" | "otlp" | "admin" | "telemetry"): string {
  const bases = {
    otlp: "withAdminRpc(withTelemetry(Agent<Env>, { tracing: otlpTracing }))",
    queue: "withAdminRpc(withTelemetry(Agent<Env>))",
    admin: "withAdminRpc(Agent<Env>)",
    telemetry: "withTelemetry(Agent<Env>)",
  };
  const base = mixins ? bases[mixins] : "Agent<Env>";
  const imports = [
    ...(mixins && mixins !== "admin" ? ['import { withTelemetry } from "@agent-oncall/telemetry";'] : []),
    ...(mixins && mixins !== "telemetry" ? ['import { withAdminRpc } from "@agent-oncall/admin-rpc";'] : []),
    ...(mixins === "otlp" ? ['import { otlpTracing } from "@agent-oncall/telemetry/otlp";'] : []),
  ];
  const src = `import { Agent } from "agents";
${imports.map((l) => `${l}\n`).join("")}type Env = { TELEMETRY_QUEUE: Queue<unknown> };
export class ImportAgent extends ${base} {
  async importAll(): Promise<number> {
    return this.runFiber("import", async (ctx) => { for (let i = 0; i < 3; i++) ctx.stash({ step: i }); return 3; });
  }
}
export default { fetch: () => new Response("ok") } satisfies ExportedHandler<Env>;
`;
  const dir = path.join(workDir, label);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "index.ts"), src);
  // esbuild applies the repo root's tsconfig "paths" (telemetry's source) to src/admin-rpc/dist, so this Worker maps
  // the name to the same source: one copy of telemetry, as in a user's Worker (there from dist/, same code).
  const telemetrySrc = path.join(repoRoot, "src/telemetry");
  writeFileSync(
    path.join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "es2022",
        module: "es2022",
        moduleResolution: "bundler",
        paths: { "@agent-oncall/telemetry": [`${telemetrySrc}/index.ts`], "@agent-oncall/telemetry/*": [`${telemetrySrc}/*`] },
      },
    }),
  );
  const config = path.join(dir, "wrangler.json");
  writeFileSync(
    config,
    JSON.stringify({
      name: `bundle-${label}`,
      main: "index.ts",
      compatibility_date: "2026-11-01",
      compatibility_flags: ["nodejs_compat"],
      durable_objects: { bindings: [{ name: "ImportAgent", class_name: "ImportAgent" }] },
      migrations: [{ tag: "v1", new_sqlite_classes: ["ImportAgent"] }],
      queues: { producers: [{ binding: "TELEMETRY_QUEUE", queue: "agent-telemetry" }] },
      // Telemetry's source imports the admin package's facts by name, which the repo root's tsconfig maps to their
      // source; a user's Worker resolves the name to the one dist copy the admin package uses itself, and so does this.
      alias: { "@agent-oncall/admin-rpc/facts": `./${path.relative(dir, path.join(repoRoot, "src/admin-rpc/dist/facts.js"))}` },
    }),
  );
  return config;
}

const fmt = (b: number) => `${(b / KB).toFixed(1)} KB`;

const consoleSize = bundle(path.join(repoRoot, "wrangler.jsonc"), "console");
console.log(`BENCH bundle: console Worker ${fmt(consoleSize.raw)} minified, ${fmt(consoleSize.gz)} gz`);
const fleet = bundle(path.join(repoRoot, "examples/demo-fleet/wrangler.jsonc"), "demo-fleet");
console.log(`BENCH bundle: demo fleet Worker (Think chat agent included) ${fmt(fleet.raw)} minified, ${fmt(fleet.gz)} gz`);
const plain = bundle(userWorker("plain", false), "plain");
const withPkgs = bundle(userWorker("with-packages", "queue"), "with-packages");
const withOtlp = bundle(userWorker("with-packages-otlp", "otlp"), "with-packages-otlp");
const added = withPkgs.gz - plain.gz;
const addedOtlp = withOtlp.gz - plain.gz;
console.log(
  `BENCH bundle: plain agent Worker ${fmt(plain.gz)} gz; with withTelemetry + withAdminRpc ${fmt(withPkgs.gz)} gz; added ${fmt(added)} gz (${fmt(withPkgs.raw - plain.raw)} minified) — target ≤ 20 KB gz ${added <= 20 * KB ? "met" : "MISSED"}`,
);
// Each package alone: the admin package (actions, and its helper publishing what the SDK does not on the agent's
// own diagnostics channel) is what an agent observed through the tail adds; the telemetry package is the opt-in outbox.
const adminOnly = bundle(userWorker("admin-only", "admin"), "admin-only");
const telemetryOnly = bundle(userWorker("telemetry-only", "telemetry"), "telemetry-only");
const addedAdmin = adminOnly.gz - plain.gz;
console.log(
  `BENCH bundle: with withAdminRpc alone (its publishing helper included) ${fmt(adminOnly.gz)} gz; added ${fmt(addedAdmin)} gz (${fmt(adminOnly.raw - plain.raw)} minified) — target ≤ 8 KB gz ${addedAdmin <= 8 * KB ? "met" : "MISSED"}`,
);
console.log(
  `BENCH bundle: with withTelemetry alone (the opt-in outbox) ${fmt(telemetryOnly.gz)} gz; added ${fmt(telemetryOnly.gz - plain.gz)} gz (${fmt(telemetryOnly.raw - plain.raw)} minified)`,
);
console.log(
  `BENCH bundle: the admin package's largest modules alone (minified): ${packageModules(adminOnly)
    .slice(0, 8)
    .map((m) => `${m.file} ${fmt(m.bytes)}`)
    .join(", ")}`,
);
// Where the added bytes go: the packages' largest modules (minified, before compression).
const mods = packageModules(withPkgs);
console.log(
  `BENCH bundle: the packages' largest modules (minified): ${mods
    .slice(0, 8)
    .map((m) => `${m.file} ${fmt(m.bytes)}`)
    .join(", ")}; ${mods.length} modules, ${fmt(mods.reduce((n, m) => n + m.bytes, 0))} in all`,
);
console.log(
  `BENCH bundle: with OTLP export too (@agent-oncall/telemetry/otlp) ${fmt(withOtlp.gz)} gz; added ${fmt(addedOtlp)} gz (${fmt(withOtlp.raw - plain.raw)} minified); the OpenTelemetry SDK is paid only by Workers that import it`,
);
