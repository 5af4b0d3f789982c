// The admin actions as the CLI offers them, read from ADMIN_ACTIONS (src/admin-rpc/actions.ts) at start: each
// action's verb is its slug, its flags are its input schema's fields, its help line comes from both. A new action
// appears in `npm run cli -- --help` and is taken by `npm run cli -- <slug>` with no edit here or in cli.mjs.
import { existsSync } from "node:fs";
import { registerHooks } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(import.meta.dirname, "..");

// Node runs the package's TypeScript source as it is (type stripping), but the source imports its siblings as
// `./x.js` (what its build emits) and the telemetry package by name (tsconfig's paths). These hooks resolve both
// to the source, as vitest and wrangler do, so the CLI needs no build and never reads a stale dist/.
registerHooks({
  resolve(specifier, context, next) {
    if (specifier.startsWith("@agent-oncall/telemetry/"))
      return next(pathToFileURL(path.join(root, "src/telemetry", `${specifier.slice("@agent-oncall/telemetry/".length)}.ts`)).href, context);
    if (specifier.endsWith(".js") && context.parentURL?.startsWith(pathToFileURL(path.join(root, "src")).href) && !specifier.startsWith("node:")) {
      const url = new URL(specifier, context.parentURL);
      if (url.protocol === "file:" && !existsSync(fileURLToPath(url))) return next(url.href.replace(/\.js$/, ".ts"), context);
    }
    return next(specifier, context);
  },
});

const { ADMIN_ACTION_NAMES, ADMIN_ACTIONS, BULK_ACTION_NAMES } = await import("../src/admin-rpc/actions.ts");

/** One input field of an action, as a CLI argument: a positional after `<Class> <name>`, or a `--flag VALUE`. */
export type CliField = { field: string; flag: string; positional: boolean; required: boolean; choices: readonly string[] | null };
export type CliAction = { name: string; verb: string; label: string; scope: "agent" | "op"; bulk: boolean; fields: CliField[] };

/** Fields an action's scope names as positionals: an op's id follows the agent it belongs to. */
const POSITIONAL: Record<"agent" | "op", readonly string[]> = { agent: [], op: ["opId"] };

type ZodLike = { def: { type: string; innerType?: ZodLike }; options?: readonly string[] };

/** camelCase → kebab-case: resultRef → result-ref. */
const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

function fieldOf(scope: "agent" | "op", field: string, schema: ZodLike): CliField {
  const optional = schema.def.type === "optional" || schema.def.type === "default";
  const inner = optional && schema.def.innerType ? schema.def.innerType : schema;
  return { field, flag: kebab(field), positional: POSITIONAL[scope].includes(field), required: !optional, choices: inner.options ?? null };
}

/** Every admin action, in ADMIN_ACTIONS' order. `reason` is every action's and is not listed among its fields. */
export const CLI_ACTIONS: CliAction[] = ADMIN_ACTION_NAMES.map((name) => {
  const a = ADMIN_ACTIONS[name];
  const shape = (a.input as unknown as { shape: Record<string, ZodLike> }).shape;
  const fields = Object.entries(shape)
    .filter(([f]) => f !== "reason")
    .map(([f, s]) => fieldOf(a.scope, f, s));
  // Positionals in the order the scope names them, flags after.
  fields.sort((x, y) => Number(y.positional) - Number(x.positional) || POSITIONAL[a.scope].indexOf(x.field) - POSITIONAL[a.scope].indexOf(y.field));
  return { name, verb: a.slug, label: a.label, scope: a.scope, bulk: a.bulk, fields };
});

/** The verbs a bulk action takes: the actions ADMIN_ACTIONS marks `bulk`. */
export const BULK_VERBS: string[] = BULK_ACTION_NAMES.map((a) => ADMIN_ACTIONS[a].slug);

/** The action a verb names, or undefined. */
export const cliAction = (verb: string | undefined) => CLI_ACTIONS.find((a) => a.verb === verb);

/** An action's usage: `resolve-op <Class> <name> <opId> --resolution verified_ran|… [--result-ref RESULT_REF] --reason R`. */
export function actionUsage(a: CliAction): string {
  const words = a.fields.map((f) => {
    const word = f.positional ? `<${f.field}>` : `--${f.flag} ${f.choices ? f.choices.join("|") : f.field.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
    return f.required ? word : `[${word}]`;
  });
  return [a.verb, "<Class>", "<name>", ...words, "--reason R"].join(" ");
}

/** The options parseArgs must accept for every action's flags (all strings: the console validates and coerces). */
export const ACTION_OPTIONS: Record<string, { type: "string" }> = Object.fromEntries(
  CLI_ACTIONS.flatMap((a) => a.fields.filter((f) => !f.positional).map((f) => [f.flag, { type: "string" as const }])),
);
