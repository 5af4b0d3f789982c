import type { Child } from "hono/jsx";
import { bytes } from "../format";

/** How much of a value the viewer draws. Past these it says what it left out; it never recurses without bound. */
export type JsonLimits = {
  /** Nesting levels drawn; deeper containers show a "deeper levels not shown" marker. */
  maxDepth: number;
  /** Values drawn in total (every scalar, array and object counts one). */
  maxNodes: number;
  /** Entries drawn per array or object. */
  maxEntries: number;
  /** Characters drawn per string or key, and of raw (non-JSON) text. */
  maxChars: number;
};

export const JSON_LIMITS: JsonLimits = { maxDepth: 16, maxNodes: 2000, maxEntries: 200, maxChars: 4000 };
/** Raw text (a preview that is not JSON) is shown up to this many characters. */
const MAX_RAW_CHARS = 100_000;

/** Marker for containers below `maxDepth`. Tests and people look for this exact text. */
export const DEEPER_MARKER = "… deeper levels not shown";

/**
 * Pretty, collapsible JSON. Everything is rendered as text nodes, so a
 * snapshot full of markup shows as markup, never runs. Depth, total size,
 * entries per container and string length are capped (`limits`), so any
 * stored value renders, however deep or large.
 */
export function JsonView(props: { value: unknown; size?: number | null; truncated?: boolean; rawText?: string | null; limits?: Partial<JsonLimits> }) {
  const limits = { ...JSON_LIMITS, ...props.limits };
  const showRaw = props.value === undefined || (props.value === null && props.rawText);
  const budget: Budget = { left: limits.maxNodes, cut: false };
  const tree = showRaw ? null : node(props.value, 0, limits, budget);
  return (
    <div class="json">
      <div class="json-meta">
        {props.size !== undefined && props.size !== null ? <span>{bytes(props.size)}</span> : null}
        {props.truncated ? <span class="warn">truncated — showing the first part only</span> : null}
        {budget.cut ? (
          <span
            class="warn"
            data-testid="json-cut"
            data-max-nodes={String(limits.maxNodes)}
          >{`display limit reached: only the first ${limits.maxNodes} values are shown`}</span>
        ) : null}
      </div>
      {showRaw ? <pre class="json-raw">{clip(props.rawText ?? "", MAX_RAW_CHARS)}</pre> : <div class="json-tree">{tree}</div>}
    </div>
  );
}

/** Values still to draw, and whether the total cap cut anything off. */
type Budget = { left: number; cut: boolean };

/** One value. Recursion is bounded by `maxDepth`, and the total work by the shared budget. */
function node(v: unknown, depth: number, limits: JsonLimits, budget: Budget): Child {
  budget.left--;
  if (v === null) return <span class="j-null">null</span>;
  if (typeof v === "string") return <span class="j-str">{JSON.stringify(clip(v, limits.maxChars))}</span>;
  if (typeof v === "number" || typeof v === "boolean") return <span class="j-lit">{String(v)}</span>;
  if (typeof v !== "object") return <span>{String(v)}</span>;

  const isArray = Array.isArray(v);
  const size = isArray ? v.length : Object.keys(v).length;
  if (!size) return <span class="j-lit">{isArray ? "[]" : "{}"}</span>;
  const label = isArray ? `[${size}]` : `{${size}}`;
  if (depth >= limits.maxDepth) return <span class="j-more">{`${label} ${DEEPER_MARKER}`}</span>;

  // Children are drawn one by one while the shared budget lasts; what is left out is said.
  const children: [string, Child][] = [];
  const entries = isArray ? v.entries() : Object.entries(v as Record<string, unknown>).values();
  for (const [k, x] of entries) {
    if (children.length >= limits.maxEntries || budget.left <= 0) break;
    children.push([String(k), node(x, depth + 1, limits, budget)]);
  }
  const hidden = size - children.length;
  if (hidden > 0 && budget.left <= 0) budget.cut = true;
  const more = hidden > 0 ? <span class="j-more" data-hidden={String(hidden)}>{`… ${hidden} more not shown`}</span> : null;

  return (
    <details open={depth < 2}>
      <summary>{label}</summary>
      {isArray ? (
        <ol class="j-list">
          {children.map(([, c]) => (
            <li>{c}</li>
          ))}
          {more ? <li>{more}</li> : null}
        </ol>
      ) : (
        <dl class="j-obj">
          {children.map(([k, c]) => (
            <>
              <dt>{clip(k, limits.maxChars)}</dt>
              <dd>{c}</dd>
            </>
          ))}
          {more ? <dd>{more}</dd> : null}
        </dl>
      )}
    </details>
  );
}

/** The first `max` characters, saying how many more there were. */
function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}… (${s.length - max} more characters)` : s;
}

/** Parses a stored preview: JSON when it is JSON, text otherwise. Never throws. */
export function parsePreview(preview: string | null | undefined): { value: unknown; rawText: string | null } {
  if (preview === null || preview === undefined) return { value: undefined, rawText: null };
  try {
    return { value: JSON.parse(preview), rawText: preview };
  } catch {
    return { value: null, rawText: preview };
  }
}
