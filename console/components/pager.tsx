import { pageLimit } from "../../src/store/read-models/paging";
import { href } from "../links";
import { listPartialWords, timelineMoreWords } from "../words";

/**
 * Keyset pagination: "next page" carries the cursor in the URL; "first page" drops it. Filters stay. A timeline
 * (`timeline`) names where its next page goes (older or later events) and says when this page is partial: it
 * stopped reading before it held `limit` events (a timeline's reading is bounded per page), so more may follow.
 */
export function Pager(props: {
  path: string;
  query: Record<string, string | undefined>;
  next: string | null;
  hasCursor: boolean;
  timeline?: { dir: "older" | "later"; shown: number; limit: number };
  /** A list page's rows against its size: a short page with a next page says that it stopped reading early. */
  list?: { noun: string; shown: number; limit: number };
}) {
  const { cursor: _c, ...rest } = props.query;
  const t = props.timeline;
  const l = props.list;
  const partial = Boolean(props.next && ((t && t.shown < t.limit) || (l && l.shown < l.limit)));
  const more = t ? timelineMoreWords(t.dir, partial) : null;
  const note = more ? more.note : l && partial ? listPartialWords(l.noun, l.shown) : null;
  return (
    <nav class="pager" data-partial={t || l ? String(partial) : undefined}>
      {props.hasCursor ? <a href={href(props.path, rest)}>« first page</a> : <span />}
      {note ? (
        <span class="muted" data-testid={t ? "timeline-partial" : "list-partial"}>
          {note}
        </span>
      ) : null}
      {props.next ? (
        <a href={href(props.path, { ...rest, cursor: props.next })} rel="next" data-testid={t ? "timeline-more" : undefined}>
          {more ? more.link : "next page »"}
        </a>
      ) : (
        <span class="muted">end of list</span>
      )}
    </nav>
  );
}

/**
 * The foot of a list page: `empty` (what "no row matches" reads, or null where the list shows its own) only when the
 * list ended with no row, and the pager, told the page's rows against its size so a short page says it stopped early.
 */
export function ListPager(props: {
  path: string;
  query: Record<string, string | undefined>;
  page: { items: readonly unknown[]; next: string | null };
  noun: string;
  empty: string | null;
}) {
  const { page, query } = props;
  return (
    <>
      {page.items.length === 0 && !page.next && props.empty ? <p class="muted">{props.empty}</p> : null}
      <Pager
        path={props.path}
        query={query}
        next={page.next}
        hasCursor={Boolean(query.cursor)}
        list={{ noun: props.noun, shown: page.items.length, limit: pageLimit(query.limit) }}
      />
    </>
  );
}
