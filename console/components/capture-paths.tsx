import type { CapturePaths } from "../../src/store/console-store";
import { ago } from "../format";
import { LISTS } from "../links";

/**
 * On an agent's page: how its events reach the console (its Worker's tail, its telemetry outbox, both) and what that
 * path can lose, so a quiet page is read for what it is (issue 34, Deliver 5; docs/capture.md has the figures).
 */
export function CapturePathsNotice(props: { capture: CapturePaths; now: number }) {
  const { tail, outbox } = props.capture;
  const where = tail?.worker ? ` of Worker ${tail.worker}` : "";
  const recorded = tail ? ` (recorded by the tail ${ago(tail.recordedAt, props.now)})` : "";
  if (tail && outbox)
    return (
      <p class="muted" data-testid="capture-paths" data-paths="tail outbox">
        Its events arrive from its Worker's tail{where}
        {recorded} and from its telemetry outbox; each event is stored once. The outbox numbers its events, so one that never arrives is counted below.
      </p>
    );
  if (tail)
    return (
      <p class="muted" data-testid="capture-paths" data-paths="tail">
        Its events arrive from its Worker's tail{where}
        {recorded}: no package of ours is needed to observe it. What that path can lose: tail events carry no numbers, so an event lost in transport cannot be
        counted; the events an invocation still held when its Worker or this console was killed are lost with it. What the runtime reports as cut short, and
        what the Queue refused, is kept in <a href={LISTS.deadLetters}>dead letters</a> (the whole fleet's); a run whose end never arrives is shown as unknown
        after a stated age and counted as a possible loss.
      </p>
    );
  if (outbox)
    return (
      <p class="muted" data-testid="capture-paths" data-paths="outbox">
        Its events arrive from its telemetry outbox (<code>@agent-oncall/telemetry</code>): numbered and kept in the agent's own storage until the Queue takes
        them, so one that never arrives is counted below. Its Worker's tail has not carried any of them.
      </p>
    );
  return (
    <p class="muted" data-testid="capture-paths" data-paths="">
      The console has no record of how its events arrive: they carry no numbers and its Worker's tail has not carried any (an older telemetry package sends them
      so).
    </p>
  );
}
