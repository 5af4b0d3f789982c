import type { ListedView } from "../../src/store/views";
import { Time } from "../components/time";
import { Layout, type PageContext } from "../layout";
import { LISTS, type ViewList, viewDeleteHref, viewHref } from "../links";
import { viewShelfWords } from "../words";

/**
 * The identity's saved views (personal, then team): each opens at its permanent address, shows its filters, and
 * offers delete to whoever may (a personal view's owner; a team view's owner or an operator).
 */
export function ViewsPage(props: { ctx: PageContext; views: ListedView[] }) {
  const { ctx } = props;
  const mayDelete = (v: ListedView) => v.owner === ctx.user.email || (v.shelf === "team" && ctx.user.role === "operator");
  return (
    <Layout ctx={ctx} title="Saved views" active={LISTS.views}>
      <p class="muted">Save a view from any list with the form above it. Opening a list with no filters shows the view you opened last for it.</p>
      <table data-testid="views">
        <thead>
          <tr>
            <th>name</th>
            <th>list</th>
            <th>filters</th>
            <th>for</th>
            <th>saved by</th>
            <th>saved</th>
            <th>
              <span class="visually-hidden">actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {props.views.map((v) => (
            <tr data-view-id={v.viewId}>
              <td>
                <a href={viewHref(v.viewId)}>{v.name}</a>
                {v.last ? <span class="muted"> (last opened)</span> : null}
              </td>
              <td>{LISTS[v.list as ViewList] ?? v.list}</td>
              <td class="mono">{v.query || "(none)"}</td>
              <td>{viewShelfWords(v.shelf)}</td>
              <td>{v.owner}</td>
              <td>
                <Time t={v.createdAt} />
              </td>
              <td>
                {mayDelete(v) ? (
                  <form method="post" action={viewDeleteHref(v.viewId)}>
                    <input type="hidden" name="_csrf" value={ctx.csrfToken} />
                    <button type="submit" aria-label={`Delete view ${v.name}`}>
                      Delete
                    </button>
                  </form>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.views.length === 0 ? <p class="muted">No saved views yet.</p> : null}
    </Layout>
  );
}
