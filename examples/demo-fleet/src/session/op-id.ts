/** Canonical JSON: object keys sorted at every level, so equal arguments always hash alike. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

/** op_id = hash(kind, canonical args, turn seq): the same operation in the same turn always gets the same id. */
export async function opId(kind: string, args: unknown, turnSeq: number): Promise<string> {
  const bytes = new TextEncoder().encode(`${kind}\u0000${canonicalJson(args)}\u0000${turnSeq}`);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return `op_${[...digest.slice(0, 16)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}
