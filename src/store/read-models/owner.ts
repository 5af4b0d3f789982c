import { AmbiguousOwner, BadRequest, type OwnedKind } from "./errors";

/**
 * Projection rows are keyed by their id AND the agent that reported them
 * (any producer can claim any id; see src/store/schema.ts). A lookup by id
 * alone therefore names the agent, or finds the one agent that reported the
 * id, and never silently picks one of several: an operator acting on the
 * page (force idle) must reach the agent the row belongs to.
 */

/** The agent a row belongs to. */
export type AgentRef = { agentClass: string; agentName: string };

/** Rows read for a lookup without an agent: enough to list who reported the id. */
const CANDIDATES = 10;

/** The agent from URL input (`?agentClass=…&agentName=…`): both or neither. */
export function ownerFrom(input: { agentClass?: unknown; agentName?: unknown }): AgentRef | undefined {
  const { agentClass, agentName } = input;
  if ((agentClass === undefined || agentClass === "") && (agentName === undefined || agentName === "")) return undefined;
  if (typeof agentClass !== "string" || !agentClass || typeof agentName !== "string" || !agentName) {
    throw new BadRequest("agentClass and agentName name the agent together: give both or neither");
  }
  return { agentClass, agentName };
}

/**
 * Reads the row with `key` = `id` of `owner`, or, without an owner, the only
 * agent's row. When several agents reported the id, `claims` may pick the one
 * the id itself names (a derived incident id carries its agent); otherwise the
 * caller is refused with who reported it (an AmbiguousOwner, a 400 the console words).
 */
export async function findOwned<T extends AgentRef>(
  db: D1Database,
  q: { table: string; select: string; key: string; agentClass: string; agentName: string; what: OwnedKind },
  id: string,
  owner?: AgentRef,
  claims?: (row: T) => boolean,
): Promise<T | null> {
  if (owner) {
    return db
      .prepare(`SELECT ${q.select} FROM ${q.table} WHERE ${q.key} = ? AND ${q.agentClass} = ? AND ${q.agentName} = ?`)
      .bind(id, owner.agentClass, owner.agentName)
      .first<T>();
  }
  const rows = (
    await db
      .prepare(`SELECT ${q.select} FROM ${q.table} WHERE ${q.key} = ? ORDER BY ${q.agentClass}, ${q.agentName} LIMIT ${CANDIDATES + 1}`)
      .bind(id)
      .all<T>()
  ).results;
  if (rows.length <= 1) return rows[0] ?? null;
  const named = claims ? rows.filter(claims) : [];
  if (named.length === 1) return named[0]!;
  const candidates = rows.slice(0, CANDIDATES).map((r) => ({ agentClass: r.agentClass, agentName: r.agentName }));
  throw new AmbiguousOwner(q.what, id, candidates, rows.length > CANDIDATES);
}
