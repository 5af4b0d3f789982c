import type { Child } from "hono/jsx";

/** A GET form: filters live in the URL, so every view can be shared by its address. */
export function FilterForm(props: { action: string; children: Child }) {
  return (
    <form class="filters" method="get" action={props.action}>
      {props.children}
      <button type="submit">Apply</button>
      <a href={props.action}>Clear</a>
    </form>
  );
}

export function TextFilter(props: { name: string; label: string; value?: string; placeholder?: string }) {
  return (
    <label>
      {props.label}
      <input type="text" name={props.name} value={props.value ?? ""} placeholder={props.placeholder ?? ""} />
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
