import type { Shelf } from "../../src/store/views";
import { LISTS, VIEW_FORGET_HREF, type ViewList, viewHref } from "../links";
import { viewShelfWords } from "../words";

/** A saved view as pages show it. */
export type ViewLink = { viewId: string; name: string; list: ViewList; shelf: Shelf };

/**
 * The saved views a page knows of: the signed-in identity's (personal, then team) for the nav, and on a list page
 * that list, its current query (what "save" keeps) and the view it was opened through.
 */
export type ViewsContext = {
  mine: ViewLink[];
  /** `query` is null when it is too long to save (src/store/views.ts viewQuery): no save form then. */
  here: { list: ViewList; query: string | null; active: ViewLink | null } | null;
};

/** The nav's views: a disclosure listing each of the identity's views (one click opens it), and the views page. */
export function ViewsMenu(props: { views: ViewLink[] }) {
  return (
    <details class="views-menu" data-testid="views-menu">
      <summary>Views ({props.views.length})</summary>
      <ul>
        {props.views.map((v) => (
          <li>
            <a href={viewHref(v.viewId)} data-testid="view-link" data-view-id={v.viewId} data-shelf={v.shelf}>
              {v.name}
            </a>{" "}
            <span class="muted">
              {v.list} · {viewShelfWords(v.shelf)}
            </span>
          </li>
        ))}
        <li>
          <a href={LISTS.views}>Manage views</a>
        </li>
      </ul>
    </details>
  );
}

/**
 * Above a list: which saved view it shows ("view: <name> · clear", so a restored view is never a surprise; clear
 * forgets it as the list's last view) and a form to save the list's current filters as a view.
 */
export function ViewBar(props: { here: NonNullable<ViewsContext["here"]>; csrfToken: string; canSaveTeam: boolean }) {
  const { here } = props;
  return (
    <div class="view-bar">
      {here.active ? (
        <form method="post" action={VIEW_FORGET_HREF} class="view-marker" data-testid="view-marker" data-view-id={here.active.viewId}>
          <input type="hidden" name="_csrf" value={props.csrfToken} />
          <input type="hidden" name="list" value={here.list} />
          view: <strong>{here.active.name}</strong> ({viewShelfWords(here.active.shelf)}) ·{" "}
          <button type="submit" class="link-button" data-testid="view-clear">
            clear
          </button>
        </form>
      ) : null}
      {here.query === null ? null : (
        <form method="post" action={LISTS.views} class="view-save" data-testid="view-save">
          <input type="hidden" name="_csrf" value={props.csrfToken} />
          <input type="hidden" name="list" value={here.list} />
          <input type="hidden" name="query" value={here.query} />
          <label>
            Save these filters as
            <input type="text" name="name" required maxlength={60} placeholder="view name" />
          </label>
          <label>
            for
            <select name="shelf">
              <option value="personal">me</option>
              {props.canSaveTeam ? <option value="team">the team</option> : null}
            </select>
          </label>
          <button type="submit">Save view</button>
        </form>
      )}
    </div>
  );
}
