import { type HotSpanList, hotSpanWords } from "../words";

/**
 * What a list spans now that closed work leaves the hot store after HOT_WINDOW_HOURS (src/store/retention.ts):
 * said on the page, so a count over a longer span is not read as complete. Nothing without the setting.
 */
export function HotSpan(props: { list: HotSpanList; hours: number | undefined }) {
  if (props.hours === undefined) return null;
  return (
    <p class="muted" data-testid="hot-span" data-list={props.list} data-hot-window-hours={String(props.hours)}>
      {hotSpanWords(props.list, props.hours)}
    </p>
  );
}
