import { FIBER_OUTCOMES, type EventRow, type FiberDetail, type FiberRow, type Page } from "../../src/store/read-models";
import { FilterForm, SelectFilter, TextFilter } from "../components/filters";
import { JsonView, parsePreview } from "../components/json-view";
import { Pager } from "../components/pager";
import { Status } from "../components/status";
import { Timeline } from "../components/timeline";
import { ago, bytes, elapsed, iso } from "../format";
import { Layout, type PageContext } from "../layout";
import { detailHref } from "../links";

type Query = Record<string, string | undefined>;

/** Every fiber run in the fleet, from the projection. */
export function FibersPage(props: { ctx: PageContext; query: Query; page: Page<FiberRow> }) {
  const q = props.query;
  return (
    <Layout ctx={props.ctx} title="Fibers" active="/fibers">
      <FilterForm action="/fibers">
        <TextFilter name="agentClass" label="agent class" value={q.agentClass} />
        <TextFilter name="agentName" label="agent name" value={q.agentName} />
        <SelectFilter name="outcome" label="status" value={q.outcome} options={FIBER_OUTCOMES} />
        <TextFilter name="since" label="since" value={q.since} placeholder="2026-11-21T00:00Z" />
      </FilterForm>
      <table data-testid="fibers">
        <thead><tr><th>fiber</th><th>agent</th><th>name</th><th>started</th><th>age</th><th>outcome</th><th class="num">snapshot</th></tr></thead>
        <tbody>
          {props.page.items.map((f) => (
            <tr>
              <td><a class="mono" href={detailHref("fibers", f.fiberId, f)}>{f.fiberId}</a></td>
              <td><a href={`/agents/${encodeURIComponent(f.agentClass)}/${encodeURIComponent(f.agentName)}`}>{f.agentClass} · {f.agentName}</a></td>
              <td>{f.name}</td>
              <td title={iso(f.startedAt)}>{ago(f.startedAt, props.ctx.now)}</td>
              <td>{elapsed(f.startedAt ?? f.firstSeen, f.endedAt ?? props.ctx.now)}</td>
              <td><Status value={f.outcome ?? "running"} /></td>
              <td class="num">{bytes(f.snapshotBytes)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.page.items.length === 0 ? <p class="muted">No fibers match.</p> : null}
      <Pager path="/fibers" query={q} next={props.page.next} hasCursor={Boolean(q.cursor)} />
    </Layout>
  );
}

/** One fiber run: its last-known snapshot and its events. */
export function FiberPage(props: { ctx: PageContext; fiber: FiberDetail; events: Page<EventRow>; query: Query }) {
  const f = props.fiber;
  const snap = parsePreview(f.snapshotPreview);
  return (
    <Layout ctx={props.ctx} title={`Fiber ${f.name}`} active="/fibers">
      <dl class="facts">
        <dt>fiber</dt><dd class="mono">{f.fiberId}</dd>
        <dt>agent</dt><dd><a href={`/agents/${encodeURIComponent(f.agentClass)}/${encodeURIComponent(f.agentName)}`}>{f.agentClass} · {f.agentName}</a></dd>
        <dt>outcome</dt><dd><Status value={f.outcome ?? "running"} /></dd>
        <dt>started</dt><dd>{iso(f.startedAt)}</dd>
        <dt>ended</dt><dd>{iso(f.endedAt)}</dd>
        {f.error ? <><dt>error</dt><dd class="warn">{f.error}</dd></> : null}
      </dl>
      <h2>Last-known snapshot {f.snapshotAt ? <span class="muted">({ago(f.snapshotAt, props.ctx.now)})</span> : null}</h2>
      {f.snapshotPreview !== null ? <JsonView value={snap.value} rawText={snap.rawText} size={f.snapshotBytes} /> : <p class="muted">This fiber never stashed a snapshot.</p>}
      <h2>Events</h2>
      <Timeline events={props.events.items} traceUrl={props.ctx.traceUrl} />
      <Pager path={`/fibers/${encodeURIComponent(f.fiberId)}`} query={props.query} next={props.events.next} hasCursor={Boolean(props.query.cursor)} />
    </Layout>
  );
}
