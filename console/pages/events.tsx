import type { EventRow, Page } from "../../src/store/read-models";
import type { TimelineSources } from "../../src/store/read-models/events";
import { ExportLinks } from "../components/export-links";
import { FilterForm, TextFilter } from "../components/filters";
import { ListPager } from "../components/pager";
import { Timeline, TimelineSourcesNote } from "../components/timeline";
import { Layout, type PageContext } from "../layout";
import { LISTS, listHref } from "../links";

type Query = Record<string, string | undefined>;

/**
 * Events of some types in a time window, newest first: where the overview's chart buckets and rollup figures
 * lead. One row per event (`data-testid="events"`, one <li> each), with its agent and correlation ids. Without a
 * type (the nav's way in, or Clear) there is nothing to list yet: the page asks for one, offering every type
 * (`types`) as a suggestion in the field and as a link.
 */
export function EventsPage(props: { ctx: PageContext; query: Query; page: (Page<EventRow> & { history?: TimelineSources }) | null; types: readonly string[] }) {
  const q = props.query;
  return (
    <Layout ctx={props.ctx} title="Events" active="/">
      <FilterForm action={LISTS.events}>
        <TextFilter name="type" label="types" value={q.type} placeholder="chat.recovery.exhausted,op.ambiguous" list="event-types" />
        <TextFilter name="since" label="since" value={q.since} placeholder="1h or 2026-11-21T00:00Z" />
        <TextFilter name="until" label="until" value={q.until} placeholder="epoch ms or ISO" />
        <TextFilter name="agentClass" label="agent class" value={q.agentClass} />
        <TextFilter name="agentName" label="agent name" value={q.agentName} />
      </FilterForm>
      <datalist id="event-types">
        {props.types.map((t) => (
          <option value={t} />
        ))}
      </datalist>
      {props.page ? (
        <>
          <ExportLinks list="events" query={q} />
          <div data-testid="events">
            <Timeline events={props.page.items} traceUrl={props.ctx.traceUrl} showAgent />
          </div>
          {props.page.history ? <TimelineSourcesNote sources={props.page.history} /> : null}
          <ListPager path={LISTS.events} query={q} page={props.page} noun="events" empty={null} />
        </>
      ) : (
        <EventTypeChoice query={q} types={props.types} />
      )}
    </Layout>
  );
}

/** No type named yet: one sentence, and every type as a link (with the window and agent already given), by family. */
function EventTypeChoice(props: { query: Query; types: readonly string[] }) {
  const { since, until, agentClass, agentName } = props.query;
  const families = new Map<string, string[]>();
  for (const t of props.types) {
    const f = t.split(".")[0]!;
    families.set(f, [...(families.get(f) ?? []), t]);
  }
  return (
    <section data-testid="events-choose-type">
      <p>Name one or more event types above (comma-separated) to list their events, newest first, or pick one:</p>
      <dl class="facts event-types">
        {[...families].map(([family, types]) => (
          <>
            <dt>{family}</dt>
            <dd>
              {types.map((t, k) => (
                <>
                  {k ? " · " : ""}
                  <a href={listHref("events", { type: t, since, until, agentClass, agentName })}>{t}</a>
                </>
              ))}
            </dd>
          </>
        ))}
      </dl>
    </section>
  );
}
