import { exportHref, type ListName } from "../links";

/**
 * The list's downloads, CSV and JSON, with the filters the page shows (the download starts at the top of the
 * list, whatever page this is). The file states the row cap, and says so at its end when the list was cut there.
 */
export function ExportLinks(props: { list: ListName; query: Record<string, string | undefined> }) {
  return (
    <p class="export-links" data-testid="export-links">
      Download this list:{" "}
      <a href={exportHref(props.list, "csv", props.query)} download data-testid="export-csv">
        CSV
      </a>{" "}
      ·{" "}
      <a href={exportHref(props.list, "json", props.query)} download data-testid="export-json">
        JSON
      </a>
    </p>
  );
}
