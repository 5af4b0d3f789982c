import type { Child } from "hono/jsx";
import { plainHref } from "../links";

/**
 * A GET form: filters live in the URL, so every view can be shared by its address. Clear shows the list plain, not
 * its last saved view (plainHref). Folded in a disclosure, which console.js opens on wide screens: on a phone the
 * first screen shows the list's rows, not its filters.
 */
export function FilterForm(props: { action: string; children: Child }) {
  return (
    <details class="fold" data-testid="filters-fold">
      <summary>Filters</summary>
      <form class="filters" method="get" action={props.action}>
        {props.children}
        <button type="submit">Apply</button>
        <a href={plainHref(props.action)} data-testid="filters-clear">
          Clear
        </a>
      </form>
    </details>
  );
}

/** A text filter; `list` names a <datalist> of suggestions for it. */
export function TextFilter(props: { name: string; label: string; value?: string; placeholder?: string; list?: string }) {
  return (
    <label>
      {props.label}
      <input type="text" name={props.name} value={props.value ?? ""} placeholder={props.placeholder ?? ""} list={props.list} />
    </label>
  );
}

export function SelectFilter(props: { name: string; label: string; value?: string; options: readonly string[] }) {
  return (
    <label>
      {props.label}
      <select name={props.name}>
        <option value="">any</option>
        {props.options.map((o) => (
          <option value={o} selected={o === props.value}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}
