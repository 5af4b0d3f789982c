import type { Child } from "hono/jsx";
import { bytes } from "../format";

/**
 * Pretty, collapsible JSON. Everything is rendered as text nodes, so a
 * snapshot full of markup shows as markup, never runs.
 */
export function JsonView(props: { value: unknown; size?: number | null; truncated?: boolean; rawText?: string | null }) {
  return (
    <div class="json">
      <div class="json-meta">
        {props.size !== undefined && props.size !== null ? <span>{bytes(props.size)}</span> : null}
        {props.truncated ? <span class="warn">truncated — showing the first part only</span> : null}
      </div>
      {props.value === undefined || (props.value === null && props.rawText) ? <pre class="json-raw">{props.rawText ?? ""}</pre> : <div class="json-tree">{node(props.value, 0)}</div>}
    </div>
  );
}

function node(v: unknown, depth: number): Child {
  if (v === null) return <span class="j-null">null</span>;
  if (typeof v === "string") return <span class="j-str">{JSON.stringify(v)}</span>;
  if (typeof v === "number" || typeof v === "boolean") return <span class="j-lit">{String(v)}</span>;
  if (Array.isArray(v)) {
    if (!v.length) return <span class="j-lit">[]</span>;
    return (
      <details open={depth < 2}>
        <summary>[{v.length}]</summary>
        <ol class="j-list">{v.slice(0, 500).map((x) => <li>{node(x, depth + 1)}</li>)}</ol>
      </details>
    );
  }
  if (typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>);
    if (!entries.length) return <span class="j-lit">{"{}"}</span>;
    return (
      <details open={depth < 2}>
        <summary>{`{${entries.length}}`}</summary>
        <dl class="j-obj">
          {entries.slice(0, 500).map(([k, x]) => (
            <>
              <dt>{k}</dt>
              <dd>{node(x, depth + 1)}</dd>
            </>
          ))}
        </dl>
      </details>
    );
  }
  return <span>{String(v)}</span>;
}

/** Parses a stored preview: JSON when it is JSON, text otherwise. */
export function parsePreview(preview: string | null | undefined): { value: unknown; rawText: string | null } {
  if (preview === null || preview === undefined) return { value: undefined, rawText: null };
  try {
    return { value: JSON.parse(preview), rawText: preview };
  } catch {
    return { value: null, rawText: preview };
  }
}
