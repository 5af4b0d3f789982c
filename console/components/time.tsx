import { ago, iso, isoMs, isValidTime } from "../format";

/**
 * Times on a page: rendered here in UTC inside <time datetime="…">, so the page reads the same without
 * scripts; console/static/time.js rewrites them in the reader's zone when they pick "local" in the header
 * (keeping the precision: seconds, or milliseconds for `ms`).
 */
export function Time(props: { t: number | null | undefined; ms?: boolean; testId?: string; class?: string }) {
  const text = props.ms ? isoMs(props.t) : iso(props.t);
  // "—" for no time, a marker for a stored value no Date can hold: nothing for the script to rewrite.
  if (!isValidTime(props.t) || props.t === 0)
    return (
      <span class={props.class} data-testid={props.testId}>
        {text}
      </span>
    );
  return (
    <time datetime={isoMs(props.t)} class={props.class} data-testid={props.testId} data-precision={props.ms ? "ms" : "s"}>
      {text}
    </time>
  );
}

/** A time relative to `now` ("3m ago"), its exact time (UTC, or the reader's zone) in the title. */
export function Ago(props: { t: number | null | undefined; now: number; class?: string }) {
  const text = ago(props.t, props.now);
  if (!isValidTime(props.t) || props.t === 0) return <span class={props.class}>{text}</span>;
  return (
    <time datetime={isoMs(props.t)} title={iso(props.t)} class={props.class} data-relative="">
      {text}
    </time>
  );
}
