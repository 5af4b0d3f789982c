import { TIME_PRESETS } from "../../src/store/read-models";
import { href } from "../links";

/**
 * Time presets for a list: links to the same view with `since=15m|1h|6h|24h|7d` (relative in the URL, so a
 * shared link keeps meaning "the last hour"), the cursor dropped; the active one is marked with aria-current.
 */
export function TimePresets(props: { path: string; query: Record<string, string | undefined> }) {
  const { cursor: _c, ...rest } = props.query;
  const active = (props.query.since ?? "").trim().toLowerCase();
  return (
    <nav class="time-presets" aria-label="Time range" data-testid="time-presets">
      <span class="muted">since</span>
      {TIME_PRESETS.map((p) => (
        <a href={href(props.path, { ...rest, since: p })} aria-current={active === p ? "true" : undefined} class={active === p ? "active" : ""}>
          {p}
        </a>
      ))}
      <a
        href={href(props.path, { ...rest, since: undefined, until: undefined })}
        aria-current={!active && !props.query.until ? "true" : undefined}
        class={!active && !props.query.until ? "active" : ""}
      >
        any time
      </a>
    </nav>
  );
}
