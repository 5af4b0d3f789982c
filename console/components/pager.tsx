import { href } from "../links";

/** Keyset pagination: "next page" carries the cursor in the URL; "first page" drops it. Filters stay. */
export function Pager(props: { path: string; query: Record<string, string | undefined>; next: string | null; hasCursor: boolean }) {
  const { cursor: _c, ...rest } = props.query;
  return (
    <nav class="pager">
      {props.hasCursor ? <a href={href(props.path, rest)}>« first page</a> : <span />}
      {props.next ? (
        <a href={href(props.path, { ...rest, cursor: props.next })} rel="next">
          next page »
        </a>
      ) : (
        <span class="muted">end of list</span>
      )}
    </nav>
  );
}
