/**
 * Sub-agents (agents 0.32 `subAgent()`: a facet Durable Object under a parent agent). The SDK's diagnostics
 * messages name a sub-agent by its own class and name, the same under every parent, so two parents' same-named
 * helpers would be one agent. The SDK keeps the ancestry on the agent itself (`parentPath`, root-first
 * `{ className, name }` steps); when a message carries it (the admin mixin adds it to every message a sub-agent
 * publishes), the agent's key name takes it in: `Parent:p1 › helper`. A top-level agent's key is its name, unchanged.
 *
 * The key lives in the name, not in a new column, so every table keyed by (class, name) keeps two parents' helpers
 * apart as it is, and a console older than this field still does.
 */

/** One step of the SDK's `parentPath`: an ancestor's class and instance name. */
export type AgentPathStep = { className: string; name: string };

/** How deep an ancestry is kept (deeper paths are not a sub-agent shape this console reads). */
export const MAX_PARENT_DEPTH = 8;
/** Between the ancestors and the agent's own name in a sub-agent's key name. */
export const SUB_AGENT_SEPARATOR = " › ";
const CLASS_NAME = /^[A-Za-z_$][\w$]{0,199}$/;

/**
 * The SDK's `parentPath` as a message carries it, or null when it carries none (a top-level agent, or a sub-agent
 * whose Worker does not publish it) or something that is not that shape.
 */
export function readParentPath(v: unknown): AgentPathStep[] | null {
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_PARENT_DEPTH) return null;
  const out: AgentPathStep[] = [];
  for (const s of v) {
    if (!s || typeof s !== "object") return null;
    const { className, name } = s as Record<string, unknown>;
    if (typeof className !== "string" || !CLASS_NAME.test(className) || typeof name !== "string" || !name || name.length > 200) return null;
    out.push({ className, name });
  }
  return out;
}

/**
 * A sub-agent's key name: each ancestor as `Class:name` (the name percent-encoded, so it holds no space and the
 * key reads back unambiguously), then its own name. Without ancestors, the name itself.
 */
export function agentKeyName(name: string, parentPath: readonly AgentPathStep[] | null | undefined): string {
  if (!parentPath?.length) return name;
  return [...parentPath.map((s) => `${s.className}:${encodeURIComponent(s.name)}`), name].join(SUB_AGENT_SEPARATOR);
}

/**
 * Reads a key name back: the ancestors and the agent's own name, or null for a top-level agent's name. A top-level
 * name that happens to start with `Class:name › ` reads as a sub-agent's; the SDK's own names never do.
 */
export function parseAgentKeyName(key: string): { parentPath: AgentPathStep[]; name: string } | null {
  const parentPath: AgentPathStep[] = [];
  let rest = key;
  for (;;) {
    const at = rest.indexOf(SUB_AGENT_SEPARATOR);
    if (at < 0) break;
    const m = /^([A-Za-z_$][\w$]{0,199}):([^\s]+)$/.exec(rest.slice(0, at));
    if (!m) break;
    let name: string;
    try {
      name = decodeURIComponent(m[2]!);
    } catch {
      break;
    }
    parentPath.push({ className: m[1]!, name });
    rest = rest.slice(at + SUB_AGENT_SEPARATOR.length);
  }
  return parentPath.length && rest && parentPath.length <= MAX_PARENT_DEPTH ? { parentPath, name: rest } : null;
}
