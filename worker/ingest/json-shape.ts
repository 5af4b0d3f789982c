/**
 * Checks that a message item is plain JSON data and not nested deeper than a
 * limit, walking it with an explicit stack: a hostile body 100,000 levels deep
 * costs a loop, never a stack overflow. Structured-clone bodies can hold what
 * JSON cannot (Map, typed arrays, Date, NaN, BigInt); stored as JSON they would
 * silently become `{}` or `null`, so they are refused with where they were.
 */

/** Characters of one key shown in a path. */
const KEY_CHARS = 40;

function segment(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  const k = /^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key);
  const shown = k.length > KEY_CHARS ? `${k.slice(0, KEY_CHARS)}…` : k;
  return path ? `${path}.${shown}` : shown;
}

/** What a non-JSON value is, for the reason ("a Map", "a Uint8Array", "NaN"). */
function kindOf(v: unknown): string | null {
  switch (typeof v) {
    case "string":
    case "boolean":
      return null;
    case "number":
      return Number.isFinite(v) ? null : String(v);
    case "object": {
      if (v === null || Array.isArray(v)) return null;
      const proto = Object.getPrototypeOf(v);
      if (proto === Object.prototype || proto === null) return null;
      return `a ${(proto?.constructor as { name?: string } | undefined)?.name || "non-plain object"}`;
    }
    default:
      return typeof v === "undefined" ? "undefined" : `a ${typeof v}`;
  }
}

/**
 * Why `value` is not acceptable JSON data: deeper than `maxDepth` levels of
 * objects/arrays (the value itself is level 1), or holding a value JSON cannot
 * represent. Null when fine.
 */
export function jsonShapeProblem(value: unknown, maxDepth: number): string | null {
  const stack: { v: unknown; depth: number; path: string }[] = [{ v: value, depth: 0, path: "" }];
  while (stack.length) {
    const { v, depth, path } = stack.pop()!;
    const kind = kindOf(v);
    if (kind) return `not JSON data: ${path || "the event"} is ${kind}`;
    if (typeof v !== "object" || v === null) continue;
    if (depth + 1 > maxDepth) return `nesting deeper than ${maxDepth} levels (at ${path || "the event"})`;
    if (Array.isArray(v)) {
      v.forEach((x, i) => {
        stack.push({ v: x, depth: depth + 1, path: segment(path, i) });
      });
    } else for (const [k, x] of Object.entries(v)) stack.push({ v: x, depth: depth + 1, path: segment(path, k) });
  }
  return null;
}
