import type { FoundBeforeHot } from "../../src/store/history/before-hot";
import type { HistoryScan } from "../../src/store/history/read";
import { agentHref } from "../links";
import { historyStopWords } from "../words";
import { Time } from "./time";

/** A history read as these components need it: what it found, the span it asked for, and what it looked at. */
type HistoryReadOf = { events: readonly unknown[]; scan: HistoryScan; from: number; to: number };

/** The data attributes that say how far a history read looked (tests and scripts read these, not the sentence). */
export function historyReadAttrs(found: HistoryReadOf): Record<string, string | undefined> {
  const s = found.scan;
  return {
    "data-count": String(found.events.length),
    "data-complete": String(s.complete),
    "data-covered-from": s.coveredFrom === null ? undefined : String(s.coveredFrom),
    "data-covered-to": s.coveredTo === null ? undefined : String(s.coveredTo),
    "data-stop": s.stop?.limit,
  };
}

/** "read from … to … (N hours, M objects read)", and where the read stopped short: the end of a sentence. */
export function HistoryReadSpan(props: { found: HistoryReadOf }) {
  const { found } = props;
  const s = found.scan;
  return (
    <>
      read from <Time t={s.coveredFrom ?? found.from} /> to <Time t={s.coveredTo ?? found.to} /> ({s.hours} hours, {s.objectsFetched} objects read)
      {s.stop ? `; ${historyStopWords(s.stop)}, so older events were not looked at` : ""}
    </>
  );
}

/** The agent(s) and the first and last event times of what history holds: rows of a facts list. */
export function HistoryFacts(props: { found: FoundBeforeHot }) {
  const { events } = props.found;
  const agents = [...new Map(events.map((e) => [`${e.agentClass}\u0000${e.agentName}`, e])).values()];
  return (
    <>
      <dt>agent</dt>
      <dd>
        {agents.map((a) => (
          <a href={agentHref(a)}>
            {a.agentClass} · {a.agentName}
          </a>
        ))}
      </dd>
      <dt>first event</dt>
      <dd>
        <Time t={events[0]?.time ?? null} ms />
      </dd>
      <dt>last event</dt>
      <dd>
        <Time t={events.at(-1)?.time ?? null} ms />
      </dd>
    </>
  );
}
