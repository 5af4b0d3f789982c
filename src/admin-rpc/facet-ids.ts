/**
 * How the agents SDK (0.32) names a sub-agent's Durable Object (a facet), so the console can tell which parent a
 * facet runs under from its id alone. The SDK's messages name a sub-agent by its own class and name only; a trace
 * item carries the facet's own Durable Object id. The SDK derives that id from the whole path (its
 * `dynamic-agents/identity.ts`, "path-v2" identities): `rootNamespace.idFromName("cf-agents:v2:" +
 * encodeURIComponent(name) + ":" + sha256hex(JSON.stringify(path)))`, where `path` is root-first `{ className, name }`
 * steps ending with the sub-agent itself and `rootNamespace` is the binding of the path's first class. A hash cannot
 * be reversed, so the console matches candidate parents it knows. Pinned against a real facet by
 * test/worker/sub-agents.test.ts. Facets created before path-v2 ("legacy": idFromName of the bare name) are not matched.
 *
 * Computing an id with `idFromName` on a binding reaches into no Durable Object: nothing here calls one.
 */

/** One root-first step of a sub-agent's path (the SDK's `parentPath` entries). */
export type FacetPathStep = { className: string; name: string };

/** The SDK's prefix of a path-v2 facet identity name. */
export const FACET_IDENTITY_PREFIX = "cf-agents:v2:";

async function sha256Hex(value: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The name the SDK passes to the root namespace's `idFromName` for the facet at the end of `path`. */
export async function facetIdentityName(path: readonly FacetPathStep[]): Promise<string> {
  const self = path.at(-1);
  if (!self || path.length < 2) throw new Error("a facet's path has its parent and itself");
  // JSON.stringify of fresh objects, so the key order is the SDK's ({ className, name }) whatever the caller passed.
  const steps = path.map((s) => ({ className: s.className, name: s.name }));
  return `${FACET_IDENTITY_PREFIX}${encodeURIComponent(self.name)}:${await sha256Hex(JSON.stringify(steps))}`;
}

/** Looks up the binding of a root class, or null when the console binds none for it. */
export type NamespaceOf = (className: string) => Pick<DurableObjectNamespace, "idFromName"> | null;

/**
 * The parent, among `candidates` (each a root-first path of an agent the console knows), under which the facet with
 * Durable Object id `objectId`, of class `agentClass` and name `agentName`, runs; null when none is. A candidate
 * whose root class has no binding is skipped (its ids cannot be computed).
 */
export async function matchFacetParent(
  objectId: string,
  self: FacetPathStep,
  candidates: readonly (readonly FacetPathStep[])[],
  namespaceOf: NamespaceOf,
): Promise<FacetPathStep[] | null> {
  for (const parent of candidates) {
    const ns = parent[0] ? namespaceOf(parent[0].className) : null;
    if (!ns) continue;
    const id = ns.idFromName(await facetIdentityName([...parent, self]));
    if (id.toString() === objectId) return parent.map((s) => ({ className: s.className, name: s.name }));
  }
  return null;
}

/** Whether `objectId` is the top-level Durable Object of `agentName` in the class's binding (null: not bound, cannot tell). */
export function isTopLevelId(objectId: string, self: FacetPathStep, namespaceOf: NamespaceOf): boolean | null {
  const ns = namespaceOf(self.className);
  return ns ? ns.idFromName(self.name).toString() === objectId : null;
}
