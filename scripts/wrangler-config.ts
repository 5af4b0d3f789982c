// Reads wrangler.jsonc files and writes derived ones, so the console's wrangler.jsonc stays the one source of
// its bindings: local dev (dev-stack.ts) and the test suites derive their configs from it instead of copying it.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

export const repoRoot = path.resolve(import.meta.dirname, "..");
export const consoleConfigPath = path.join(repoRoot, "wrangler.jsonc");
/** Where derived configs are written (git-ignored). */
export const generatedDir = path.join(repoRoot, ".wrangler", "generated");

export type DoBinding = { name: string; class_name: string; script_name?: string };
export type WranglerConfig = {
  name: string;
  main?: string;
  compatibility_date?: string;
  durable_objects?: { bindings?: DoBinding[] };
  vars?: Record<string, string>;
  assets?: { directory?: string; binding?: string };
  d1_databases?: { binding?: string; database_name?: string; database_id?: string; migrations_dir?: string }[];
  [key: string]: unknown;
};

/** Parses a wrangler.jsonc (comments and trailing commas allowed) with TypeScript's JSONC reader. */
export function readWranglerConfig(file: string): WranglerConfig {
  const { config, error } = ts.parseConfigFileTextToJson(file, readFileSync(file, "utf8"));
  if (error || !config || typeof config !== "object")
    throw new Error(`cannot read ${file}: ${error ? ts.flattenDiagnosticMessageText(error.messageText, "\n") : "not an object"}`);
  if (typeof (config as WranglerConfig).name !== "string")
    throw new Error(`${file} has no "name": a Worker needs one so the console can bind its agents by script_name`);
  return config as WranglerConfig;
}

/** The console var listing the agent classes it may address (read by worker/admin-client.ts). */
export const AGENT_CLASSES_VAR = "AGENT_CLASSES";

/**
 * What is wrong with a console config's agent allowlist: AGENT_CLASSES must list
 * exactly the agents its Durable Object bindings bind, each binding named after
 * its class (the admin client looks a class up by binding name). Empty when fine.
 */
export function agentClassesProblems(config: WranglerConfig): string[] {
  const bindings = config.durable_objects?.bindings ?? [];
  const problems = bindings.filter((b) => b.name !== b.class_name).map((b) => `binding ${b.name} must be named after its class ${b.class_name}`);
  const declared = (config.vars?.[AGENT_CLASSES_VAR] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const bound = bindings.map((b) => b.name);
  for (const c of bound) if (!declared.includes(c)) problems.push(`${c} is bound but missing from vars.${AGENT_CLASSES_VAR}`);
  for (const c of declared) if (!bound.includes(c)) problems.push(`vars.${AGENT_CLASSES_VAR} lists ${c}, which no Durable Object binding binds`);
  return problems;
}

/** The Durable Object classes a Worker hosts itself (bindings without script_name). */
export function hostedAgentClasses(config: WranglerConfig): string[] {
  return (config.durable_objects?.bindings ?? []).filter((b) => !b.script_name).map((b) => b.class_name);
}

/** Re-roots the relative paths of a config read from `from`, so it can be written anywhere. */
function absolutePaths(config: WranglerConfig, from: string): WranglerConfig {
  const dir = path.dirname(from);
  const abs = (p: string | undefined) => (p === undefined ? undefined : path.resolve(dir, p));
  const out: WranglerConfig = { ...config };
  delete out.$schema;
  if (out.main) out.main = abs(out.main);
  if (out.assets?.directory) out.assets = { ...out.assets, directory: abs(out.assets.directory) };
  if (out.d1_databases) out.d1_databases = out.d1_databases.map((d) => (d.migrations_dir ? { ...d, migrations_dir: abs(d.migrations_dir) } : d));
  return out;
}

/**
 * The console's wrangler.jsonc with its agent bindings replaced: `agents` maps
 * each agent class to the Worker (script_name) that hosts it; `null` drops
 * them all (the test worker hosts its agents itself, and passes AGENT_CLASSES in
 * `vars`). AGENT_CLASSES is written from the bindings written, so it cannot drift;
 * the source config must already agree with itself. `vars` are added last.
 */
export function deriveConsoleConfig(opts: { agents: { className: string; scriptName: string }[] | null; vars?: Record<string, string> }): WranglerConfig {
  const source = readWranglerConfig(consoleConfigPath);
  const problems = agentClassesProblems(source);
  if (problems.length) throw new Error(`${consoleConfigPath}: the agent allowlist does not match the agent bindings:\n  ${problems.join("\n  ")}`);
  const base = absolutePaths(source, consoleConfigPath);
  const { [AGENT_CLASSES_VAR]: _declared, ...baseVars } = base.vars ?? {};
  const allowlist: Record<string, string> = opts.agents === null ? {} : { [AGENT_CLASSES_VAR]: opts.agents.map((a) => a.className).join(",") };
  const out: WranglerConfig = { ...base, vars: { ...baseVars, ...allowlist, ...opts.vars } };
  if (opts.agents === null) delete out.durable_objects;
  else out.durable_objects = { bindings: opts.agents.map((a) => ({ name: a.className, class_name: a.className, script_name: a.scriptName })) };
  return out;
}

/** Writes a derived config under .wrangler/generated and returns its path. */
export function writeGeneratedConfig(fileName: string, config: WranglerConfig): string {
  mkdirSync(generatedDir, { recursive: true });
  const file = path.join(generatedDir, fileName);
  writeFileSync(file, `// Generated by scripts/wrangler-config.ts; edit the source config instead.\n${JSON.stringify(config, null, 2)}\n`);
  return file;
}

/** Makes a path absolute against the repo root (how scripts take paths given on the command line). */
export function fromRoot(p: string): string {
  return path.resolve(repoRoot, p);
}

/** Reads a config and re-roots its paths (for a Worker config given by the user). */
export function readAbsolute(file: string): WranglerConfig {
  return absolutePaths(readWranglerConfig(file), file);
}

/**
 * `config` with `n - 1` more D1 databases, DB_P1 … (store partitions, src/store/partitions.ts), each a copy of its
 * DB binding under another name and id: for the test suites and the simulator, which compare one store with two.
 */
export function withPartitionDatabases(config: WranglerConfig, n: number): WranglerConfig {
  const dbs = config.d1_databases ?? [];
  const home = dbs.find((d) => d.binding === "DB");
  if (!home) throw new Error("the console's wrangler.jsonc binds no D1 database DB");
  const extra = Array.from({ length: n - 1 }, (_, k) => ({
    ...home,
    binding: `DB_P${k + 1}`,
    database_name: `${home.database_name ?? "db"}-p${k + 1}`,
    database_id: `00000000-0000-4000-8000-${String(k + 1).padStart(12, "0")}`,
  }));
  return { ...config, d1_databases: [...dbs.filter((d) => !/^DB_P\d+$/.test(d.binding ?? "")), ...extra] };
}
