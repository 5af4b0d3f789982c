// Command-line handling of the dev stack (`npm start`, `npm run dev:with`): its own options, and everything else
// passed through to `wrangler dev` unchanged. Pure (no Node APIs), so it is tested like any other module.

/** The dev stack's own options; the rest of the command line goes to `wrangler dev`. */
export type DevStackArgs = {
  app?: string;
  port?: number;
  persistTo?: string;
  vars: Record<string, string>;
  prefix?: string;
  tick?: string;
  tickMs?: number;
  inspectorPort?: number;
  demo: boolean;
  help: boolean;
  /** Arguments for `wrangler dev`, in the order given (unknown options with their values, and all after `--`). */
  wranglerArgs: string[];
};

/** Options that take a value. `--name value` and `--name=value` both work. */
const VALUE_OPTIONS = ["app", "port", "persist-to", "var", "prefix", "tick", "tick-ms", "inspector-port"] as const;
type ValueOption = (typeof VALUE_OPTIONS)[number];
const FLAG_OPTIONS = ["demo", "help"] as const;

/** Options the stack sets on `wrangler dev` itself: passing them through would contradict what it configured. */
const OWNED_BY_STACK = new Set(["--ip", "-c", "--config", "--env-file"]);

/** A usage error, with a sentence for the user. */
export class DevArgsError extends Error {}

const portOf = (name: string, raw: string): number => {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isInteger(n) || n < 1 || n > 65535) throw new DevArgsError(`--${name} takes a port number (1-65535), got "${raw}"`);
  return n;
};

/**
 * Splits the dev stack's command line: its own options are parsed, every other argument goes to `wrangler dev`
 * as given (so `--log-level debug`, `--local-protocol https`, … work), as does everything after a bare `--`.
 */
export function parseDevArgs(argv: readonly string[]): DevStackArgs {
  const out: DevStackArgs = { vars: {}, demo: false, help: false, wranglerArgs: [] };
  const set = (name: ValueOption, value: string): void => {
    switch (name) {
      case "app":
        out.app = value;
        break;
      case "port":
        out.port = portOf(name, value);
        break;
      case "persist-to":
        out.persistTo = value;
        break;
      case "var": {
        const i = value.indexOf("=");
        if (i <= 0) throw new DevArgsError(`--var takes KEY=VALUE, got "${value}"`);
        out.vars[value.slice(0, i)] = value.slice(i + 1);
        break;
      }
      case "prefix":
        out.prefix = value;
        break;
      case "tick":
        out.tick = value;
        break;
      case "tick-ms": {
        const n = Number(value);
        if (!Number.isFinite(n) || n <= 0) throw new DevArgsError(`--tick-ms takes a number of milliseconds, got "${value}"`);
        out.tickMs = n;
        break;
      }
      case "inspector-port":
        out.inspectorPort = portOf(name, value);
        break;
    }
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      out.wranglerArgs.push(...argv.slice(i + 1));
      break;
    }
    const m = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    const name = m?.[1];
    if (name && (VALUE_OPTIONS as readonly string[]).includes(name)) {
      const value = m[2] ?? argv[++i];
      if (value === undefined) throw new DevArgsError(`--${name} needs a value`);
      set(name as ValueOption, value);
    } else if (name && (FLAG_OPTIONS as readonly string[]).includes(name) && m[2] === undefined) {
      out[name as (typeof FLAG_OPTIONS)[number]] = true;
    } else {
      const flag = arg.split("=")[0]!;
      if (OWNED_BY_STACK.has(flag)) throw new DevArgsError(`${flag} is set by the dev stack itself and cannot be passed to wrangler dev`);
      out.wranglerArgs.push(arg);
    }
  }
  return out;
}

/**
 * The inspector port `wrangler dev` gets: `--inspector-port` if given, else `dev.inspector_port` of the user's own
 * config (wrangler would read it only from the first config, which is the stack's gateway), else none (the caller
 * picks a free one, so two stacks on one machine do not both take wrangler's default 9229).
 */
export function inspectorPortFor(args: Pick<DevStackArgs, "inspectorPort">, appConfig: { dev?: unknown; [key: string]: unknown }): number | undefined {
  if (args.inspectorPort !== undefined) return args.inspectorPort;
  const dev = appConfig.dev;
  const configured = dev && typeof dev === "object" ? (dev as { inspector_port?: unknown }).inspector_port : undefined;
  return typeof configured === "number" && Number.isInteger(configured) && configured > 0 && configured <= 65535 ? configured : undefined;
}
