import type { Shelf } from "../../src/store/views";
import { LISTS, VIEW_FORGET_HREF, VIEWS_MENU_HREF, type ViewList, viewHref } from "../links";
import { viewShelfWords } from "../words";

/** A saved view as pages show it. */
export type ViewLink = { viewId: string; name: string; list: ViewList; shelf: Shelf };

/**
 * A list page's saved-view state: which list, its current query (what "save" keeps; null when too long to keep, so
 * no save form) and the view it was opened through.
 */
export type ListViewContext = { list: ViewList; query: string | null; active: ViewLink | null };

/**
 * The nav's views: a disclosure whose items load when it is first opened (one request, not one D1 read on every
 * page); without script it still links to the views page.
 */
export function ViewsMenu() {
  return (
    <details class="views-menu" data-testid="views-menu" hx-get={VIEWS_MENU_HREF} hx-trigger="toggle once" hx-target="find ul" hx-swap="innerHTML">
      <summary>Views</summary>
      <ul>
        <li>
          <a href={LISTS.views}>Manage views</a>
        </li>
      </ul>
    </details>
  );
}

/** The menu's items: each of the identity's views (one click opens it), then the views page. */
export function ViewsMenuItems(props: { views: ViewLink[] }) {
  return (
    <>
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
      {props.views.length === 0 ? <li class="muted">No saved views yet.</li> : null}
      <li>
        <a href={LISTS.views}>Manage views</a>
      </li>
    </>
  );
}

/**
 * Above a list: which saved view it shows ("view: <name> · clear", so a restored view is never a surprise; clear
 * forgets it as the list's last view) and a form to save the list's current filters as a view.
 */
export function ViewBar(props: { here: ListViewContext; csrfToken: string; canSaveTeam: boolean }) {
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
        // Folded like the filters (console.js opens both on wide screens).
        <details class="fold">
          <summary>Save these filters as a view</summary>
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
        </details>
      )}
    </div>
  );
}
