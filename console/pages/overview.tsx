import { RUN_KINDS, type EventSeries, type IncidentRow, type OverviewCounts } from "../../src/store/read-models";
import { IncidentTable } from "../components/incident-table";
import { capped, href } from "../format";
import { Time } from "../components/time";
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
  const cards: [string, string, { n: number; capped: boolean }, boolean][] = [
    ["Running runs", href("/fibers", { outcome: "running" }), counts.running, false],
    ["Open incidents", href("/incidents", { status: "open" }), counts.openIncidents, counts.openIncidents.n > 0],
    ["Exhaustions (24 h)", href("/incidents", { status: "exhausted", since: "24h" }), counts.exhaustions24h, counts.exhaustions24h.n > 0],
    ["Ambiguous ops", href("/ops", { open: "true" }), counts.ambiguousOps, counts.ambiguousOps.n > 0],
    ["Stuck", "/stuck", stuck, stuck.n > 0],
    ["Tokens re-spent by recovery (24 h)", href("/incidents", { since: "24h" }), { n: counts.respentTokens24h, capped: false }, false],
    // Agents, not events: the list it links to has one row per agent (each row says how many of its events are missing).
    ["Agents with missing events", href("/agents", { gaps: "true" }), counts.agentsWithGaps, counts.agentsWithGaps.n > 0],
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
            <canvas id="events-chart" role="img" aria-label="Chart of events in the last 24 hours" aria-describedby="events-chart-summary" data-chart={JSON.stringify({ buckets: series.buckets, series: series.series })} />
          </div>
          <ChartData series={series} />
        </section>
        <section>
          <h2>Top exhaustion reasons (24 h)</h2>
          {reasons.length ? (
            <table>
              <tbody>
                {reasons.map((r) => (
                  <tr>
                    <td><a href={href("/incidents", { status: "exhausted", reason: r.reason, since: "24h" })}>{r.reason || "(no reason)"}</a></td>
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

/**
 * The chart's text alternative: each series' total and busiest 5 minutes, and (in a disclosure) the events
 * per hour for every hour that had some, with times as <time> elements so the UTC/local toggle applies.
 */
export function ChartData(props: { series: EventSeries }) {
  const { buckets, series } = props.series;
  const names = Object.keys(series);
  // Hours, not 5-minute buckets: 24 rows read better than 288 (the summary names each series' busiest 5 minutes).
  const hours = new Map<number, number[]>();
  buckets.forEach((b, i) => {
    const h = Math.floor(b / 3_600_000) * 3_600_000;
    const row = hours.get(h) ?? names.map(() => 0);
    names.forEach((n, j) => (row[j]! += series[n]![i] ?? 0));
    hours.set(h, row);
  });
  const rows = [...hours].filter(([, ns]) => ns.some((n) => n > 0));
  return (
    <div class="chart-data" data-testid="chart-data">
      <p id="events-chart-summary">
        Events per 5 minutes over the last 24 hours:{" "}
        {names
          .map((n) => {
            const vals = series[n]!;
            const total = vals.reduce((a, v) => a + v, 0);
            return { n, total, peak: Math.max(0, ...vals), at: buckets[vals.indexOf(Math.max(0, ...vals))] };
          })
          .map((s, i) => (
            <span>
              {i ? "; " : ""}
              {s.n} {s.total}
              {s.total ? <> (peak {s.peak} at <Time t={s.at} />)</> : null}
            </span>
          ))}
        .
      </p>
      <details>
        <summary>The chart as a table</summary>
        {rows.length ? (
          <table data-testid="chart-table">
            <thead><tr><th>hour from</th>{names.map((n) => <th class="num">{n}</th>)}</tr></thead>
            <tbody>
              {rows.map(([b, ns]) => (
                <tr><td><Time t={b} /></td>{ns.map((n) => <td class="num">{n}</td>)}</tr>
              ))}
            </tbody>
          </table>
        ) : (
          <p class="muted">No events in the last 24 hours.</p>
        )}
      </details>
    </div>
  );
}
