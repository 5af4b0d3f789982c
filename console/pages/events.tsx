import type { EventRow, Page } from "../../src/store/read-models";
import { ExportLinks } from "../components/export-links";
import { FilterForm, TextFilter } from "../components/filters";
import { ListPager } from "../components/pager";
import { Timeline } from "../components/timeline";
import { Layout, type PageContext } from "../layout";
import { LISTS } from "../links";

type Query = Record<string, string | undefined>;

/**
 * Events of some types in a time window, newest first: where the overview's chart buckets and rollup figures
 * lead. One row per event (`data-testid="events"`, one <li> each), with its agent and correlation ids.
 */
export function EventsPage(props: { ctx: PageContext; query: Query; page: Page<EventRow> }) {
  const q = props.query;
  return (
    <Layout ctx={props.ctx} title="Events" active="/">
      <FilterForm action={LISTS.events}>
        <TextFilter name="type" label="types" value={q.type} placeholder="chat.recovery.exhausted,op.ambiguous" />
        <TextFilter name="since" label="since" value={q.since} placeholder="1h or 2026-11-21T00:00Z" />
        <TextFilter name="until" label="until" value={q.until} placeholder="epoch ms or ISO" />
        <TextFilter name="agentClass" label="agent class" value={q.agentClass} />
        <TextFilter name="agentName" label="agent name" value={q.agentName} />
      </FilterForm>
      <ExportLinks list="events" query={q} />
      <div data-testid="events">
        <Timeline events={props.page.items} traceUrl={props.ctx.traceUrl} showAgent />
      </div>
      <ListPager path={LISTS.events} query={q} page={props.page} noun="events" empty={null} />
    </Layout>
  );
}
