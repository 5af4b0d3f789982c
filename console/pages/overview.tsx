import { RUN_KINDS, type EventSeries, type IncidentRow, type OverviewCounts } from "../../src/store/read-models";
import { IncidentTable } from "../components/incident-table";
import { capped, href } from "../format";
import { Layout, type PageContext } from "../layout";
import { KIND_LABEL } from "./fibers";

export type OverviewData = {
  counts: OverviewCounts;
  series: EventSeries;
  reasons: { reason: string; n: number }[];
  worst: IncidentRow[];
  /** Stuck findings now (stuck detection), capped. */
  stuck: { n: number; capped: boolean };
};

/** The on-call overview: the four numbers that matter, the trend, and the way to the worst incident. */
export function OverviewPage(props: { ctx: PageContext; data: OverviewData }) {
  return (
    <Layout ctx={props.ctx} title="On-call overview" active="/" scripts={["/vendor/chart.umd.min.js"]}>
      <div id="overview-live" data-live hx-get="/partials/overview" hx-trigger={`every ${props.ctx.pollSeconds}s, refresh`} hx-swap="innerHTML">
        <OverviewLive ctx={props.ctx} data={props.data} />
      </div>
    </Layout>
  );
}

/** The refreshing part of the overview (an htmx fragment). */
export function OverviewLive(props: { ctx: PageContext; data: OverviewData }) {
  const { counts, series, reasons, worst, stuck } = props.data;
  const since24h = props.ctx.now - 86_400_000;
  const cards: [string, string, { n: number; capped: boolean }, boolean][] = [
    ["Running runs", href("/fibers", { outcome: "running" }), counts.running, false],
    ["Open incidents", href("/incidents", { status: "open" }), counts.openIncidents, counts.openIncidents.n > 0],
    ["Exhaustions (24 h)", href("/incidents", { status: "exhausted", since: new Date(since24h).toISOString() }), counts.exhaustions24h, counts.exhaustions24h.n > 0],
    ["Ambiguous ops", href("/ops", { open: "true" }), counts.ambiguousOps, counts.ambiguousOps.n > 0],
    ["Stuck", "/stuck", stuck, stuck.n > 0],
  ];
  return (
    <>
      <section class="cards">
        {cards.map(([label, link, value, alert]) => (
          <a class={`card ${alert ? "alert" : ""}`} href={link} data-testid={`count-${label}`}>
            <div class="n">{capped(value)}</div>
            <div class="label">{label}</div>
          </a>
        ))}
      </section>
      <RunningByKind counts={counts} />
      <div class="grid2">
        <section>
          <h2>Last 24 hours</h2>
          <div class="chart-box">
            {/* The series travel in a data attribute: escaped by the renderer, decoded by the browser, never parsed as HTML. */}
            <canvas id="events-chart" data-chart={JSON.stringify({ buckets: series.buckets, series: series.series })} />
          </div>
        </section>
        <section>
          <h2>Top exhaustion reasons (24 h)</h2>
          {reasons.length ? (
            <table>
              <tbody>
                {reasons.map((r) => (
                  <tr>
                    <td><a href={href("/incidents", { status: "exhausted", reason: r.reason, since: new Date(since24h).toISOString() })}>{r.reason || "(no reason)"}</a></td>
                    <td class="num">{r.n}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p class="muted">No exhaustions in the last 24 hours.</p>
          )}
        </section>
      </div>
      <h2>Worst open incidents</h2>
      {worst.length ? (
        <IncidentTable rows={worst} now={props.ctx.now} testId="worst-incidents" />
      ) : (
        <p class="muted">Nothing open. Quiet shift.</p>
      )}
    </>
  );
}

/**
 * Running runs per kind, each split into confirmed (a reconciliation found it alive after its last event)
 * and unconfirmed (running as far as its events tell). Closed runs never count.
 */
function RunningByKind(props: { counts: OverviewCounts }) {
  const byKind = props.counts.runningByKind;
  return (
    <table data-testid="running-by-kind">
      <thead><tr><th>running</th>{RUN_KINDS.map((k) => <th class="num">{KIND_LABEL[k]}</th>)}</tr></thead>
      <tbody>
        <tr>
          <td>all</td>
          {RUN_KINDS.map((k) => <td class="num"><a href={href("/fibers", { kind: k, outcome: "running" })} data-testid={`running-${k}`}>{capped(byKind[k])}</a></td>)}
        </tr>
        <tr>
          <td title="a reconciliation found it alive after its last event">confirmed by the agent</td>
          {RUN_KINDS.map((k) => <td class="num" data-testid={`confirmed-${k}`}>{byKind[k].confirmed}{byKind[k].capped ? ` of the newest ${byKind[k].n}` : ""}</td>)}
        </tr>
        <tr>
          <td title="running as far as its events tell; no reconciliation has confirmed it since">unconfirmed</td>
          {RUN_KINDS.map((k) => <td class="num" data-testid={`unconfirmed-${k}`}>{byKind[k].n - byKind[k].confirmed}</td>)}
        </tr>
      </tbody>
    </table>
  );
}
