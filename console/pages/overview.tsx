import {
  BUCKET_MS,
  type Deploy,
  type EventSeries,
  type IncidentRow,
  type OverviewCounts,
  overviewIncidentFilters,
  RUN_KINDS,
  seriesTypes,
  type TopReasons,
} from "../../src/store/read-models";
import type { SuppressedAlerts } from "../../src/store/read-models/alerts";
import type { ExhaustingSoon } from "../../src/store/read-models/budget";
import { LOSS_KINDS } from "../../src/store/read-models/dead-letters";
import type { OverviewNow } from "../../src/store/read-models/overview-now";
import { NOT_KNOWN_OUTCOMES, noPossibleLoss, type PossibleLosses } from "../../src/store/read-models/possible-losses";
import { forecastWords, notForecastLines } from "../budget-words";
import { IncidentTable } from "../components/incident-table";
import { Time } from "../components/time";
import { capped, count } from "../format";
import { Layout, type PageContext } from "../layout";
import { incidentHref, LISTS, listHref } from "../links";
import { LOSS_KIND_WORDS } from "./dead-letters";
import { OverviewNowSection, windowWords } from "./overview-now";
import { KIND_LABEL } from "./runs";

export type OverviewData = {
  counts: OverviewCounts;
  series: EventSeries;
  /** The top exhaustion reasons: exhausted incidents grouped by reason, with the filters each count used. */
  reasons: TopReasons;
  /** Open incidents only (the newest few). */
  worst: IncidentRow[];
  /** Stuck findings now (stuck detection), capped. */
  stuck: { n: number; capped: boolean };
  /** Worker versions first seen in the chart's window: marked on it. */
  deploys: Deploy[];
  /** Open incidents forecast to exhaust within the configured window (EXHAUST_FORECAST_MINUTES), soonest first. */
  exhausting: ExhaustingSoon;
  /** Agents whose alarm keeps firing with nothing to do (the awake list's loops), capped at that list's length. */
  alarmLoops: { n: number; capped: boolean };
  /** What the console may have lost: runs whose end it does not know, events lost on the way in, classes never heard from. */
  losses: PossibleLosses;
  /** The first screen: alerts, the recent window's figures and trend, the last hour's chart (bounded reads). */
  now: OverviewNow;
};

/**
 * The on-call overview. First what burns now (its own fragment, refreshed on its own: OverviewNowSection), drawn
 * with the page from bounded reads; then the 24 h figures, the trend and the way to the worst incident, which read
 * thousands of rows on a busy store: a fragment loaded as soon as the page is (hx-trigger "load"), and refreshed.
 */
export function OverviewPage(props: { ctx: PageContext; now: OverviewNow; deploys: Deploy[]; suppressed: SuppressedAlerts }) {
  return (
    <Layout ctx={props.ctx} title="On-call overview" active="/" scripts={["chart.umd.min.js"]}>
      <div id="overview-now" data-live hx-get="/partials/overview-now" hx-trigger={`every ${props.ctx.pollSeconds}s, refresh`} hx-swap="innerHTML">
        <OverviewNowSection ctx={props.ctx} now={props.now} deploys={props.deploys} suppressed={props.suppressed} />
      </div>
      <div id="overview-live" data-live data-lazy hx-get="/partials/overview" hx-trigger={`load, every ${props.ctx.pollSeconds}s, refresh`} hx-swap="innerHTML">
        <p class="muted" data-testid="lazy-placeholder">
          Loading the 24 hour figures, the worst open incidents and the top exhaustion reasons…
        </p>
      </div>
    </Layout>
  );
}

/**
 * A figure and the list it counts: the link lists exactly the rows the figure counts (same filters, same
 * window). `data-figure` carries the number for checks (test/worker/routes/overview-links.test.ts walks every
 * one); `data-figure-of="tokens"` says the figure sums the listed events' tokens instead of counting them, and
 * `data-figure-capped` that the figure stopped at its cap (the list has more).
 */
export function Figure(props: {
  href: string;
  value: { n: number; capped: boolean };
  of?: "tokens";
  testId?: string;
  class?: string;
  title?: string;
  children?: unknown;
}) {
  return (
    <a
      class={props.class}
      title={props.title}
      href={props.href}
      data-figure={String(props.value.n)}
      data-figure-of={props.of}
      data-figure-capped={props.value.capped ? "true" : undefined}
      data-testid={props.testId}
    >
      {props.children ?? capped(props.value)}
    </a>
  );
}

/** The refreshing part of the overview (an htmx fragment). */
export function OverviewLive(props: { ctx: PageContext; data: OverviewData }) {
  const { counts, series, reasons, worst, stuck, deploys, exhausting, alarmLoops, losses, now } = props.data;
  const inc = overviewIncidentFilters(counts.window.since);
  const cards: [string, string, { n: number; capped: boolean }, boolean, "tokens" | undefined][] = [
    ["Running runs", listHref("runs", { outcome: "running" }), counts.running, false, undefined],
    ["Open incidents", listHref("incidents", inc.open), counts.openIncidents, counts.openIncidents.n > 0, undefined],
    ["Exhaustions (24 h)", listHref("incidents", inc.exhausted), counts.exhaustions24h, counts.exhaustions24h.n > 0, undefined],
    ["Ambiguous ops", listHref("ops", { open: "true" }), counts.ambiguousOps, counts.ambiguousOps.n > 0, undefined],
    ["Stuck", listHref("stuck"), stuck, stuck.n > 0, undefined],
    // What recovery re-spent: the model.usage events that carried an incident id, over the rollups' window.
    [
      "Tokens re-spent by recovery (24 h)",
      listHref("events", { type: "model.usage", withIncident: "true", since: counts.window.rollupSince }),
      { n: counts.respentTokens24h, capped: false },
      false,
      "tokens",
    ],
    // Agents, not events: the list it links to has one row per agent (each row says how many of its events are missing).
    ["Agents with missing events", listHref("agents", { gaps: "true" }), counts.agentsWithGaps, counts.agentsWithGaps.n > 0, undefined],
    // Agents that said, when reconciliation asked, that their events cannot reach the console, and have sent none since.
    ["Agents whose events cannot reach the console", listHref("agents", { blocked: "true" }), counts.agentsBlocked, counts.agentsBlocked.n > 0, undefined],
    // Agents, each kept awake by an alarm that keeps firing with nothing to do: the awake list's loops.
    ["Alarm loops", listHref("awake", { resident: "idle" }), alarmLoops, alarmLoops.n > 0, undefined],
  ];
  return (
    <>
      {/* What to act on comes right after what burns: on a phone the worst open incident is on the second screen, not the fifth. */}
      <h2>Worst open incidents</h2>
      {worst.length ? (
        <IncidentTable rows={worst} now={props.ctx.now} testId="worst-incidents" />
      ) : now.quiet ? (
        <p class="muted" data-testid="quiet-shift">
          Nothing open. Quiet shift.
        </p>
      ) : (
        // Incidents can open and exhaust within seconds: "nothing open" is not "quiet" while the recent figures burn.
        <p data-testid="nothing-open-not-quiet">
          Nothing open at this moment, but not quiet: there were exhaustions or ambiguous ops in the last {windowWords(now.window.recentMs)}
          (see above). Incidents can open and exhaust within seconds.
        </p>
      )}
      <section class="cards">
        {cards.map(([label, link, value, alert, of]) => (
          <Figure class={`card ${alert ? "alert" : ""}`} href={link} value={value} of={of} testId={`count-${label}`}>
            <div class="n">{capped(value)}</div>
            <div class="label">{label}</div>
          </Figure>
        ))}
      </section>
      <PossibleLossesSection losses={losses} hotWindowHours={props.ctx.hotWindowHours} />
      <ExhaustingCard soon={exhausting} now={props.ctx.now} />
      <RunningByKind counts={counts} />
      <div class="grid2">
        <section>
          <h2>Last 24 hours</h2>
          <div class="chart-box">
            {/* The series travel in a data attribute: escaped by the renderer, decoded by the browser, never parsed as HTML. A click on a bucket opens its events (console.js). */}
            <canvas
              id="events-chart"
              role="img"
              aria-label="Chart of events in the last 24 hours"
              aria-describedby="events-chart-summary"
              data-chart={JSON.stringify({
                buckets: series.buckets,
                series: series.series,
                bucketMs: BUCKET_MS,
                types: Object.fromEntries(Object.keys(series.series).map((n) => [n, seriesTypes(n)])),
              })}
              // Deploys as marks on the time axis (console.js draws a line at each): version and first-seen time.
              data-deploys={JSON.stringify(deploys.map((d) => ({ version: d.version, at: d.firstSeen })))}
            />
          </div>
          <p>
            <a href={LISTS.deploys} data-testid="deploys-link" data-deploys-count={String(deploys.length)}>
              {deploys.length === 1 ? "1 deploy" : `${count(deploys.length)} deploys`} in the last 24 hours: incidents by version
            </a>
          </p>
          <ChartData series={series} />
        </section>
        <section>
          <h2>Top exhaustion reasons (24 h)</h2>
          {reasons.reasons.length ? (
            <table data-testid="top-reasons">
              <tbody>
                {reasons.reasons.map((r) => (
                  <tr>
                    <td data-label="reason">{r.reason || "(no reason)"}</td>
                    <td class="num" data-label="exhausted">
                      <Figure
                        href={listHref("incidents", { ...reasons.filters, ...(r.reason ? { reason: r.reason } : { noReason: "true" }) })}
                        value={{ n: r.n, capped: false }}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p class="muted">No exhaustions in the last 24 hours.</p>
          )}
          {reasons.bounded ? <p class="muted">Counted over the newest exhausted incidents only: there are more than one scan covers.</p> : null}
        </section>
      </div>
    </>
  );
}

/** How the runs list shows each not-known outcome, in words. */
const NOT_KNOWN_WORDS: Record<(typeof NOT_KNOWN_OUTCOMES)[number], string> = {
  unknown: "shown as unknown: the agent cannot be asked and no event came for its run after a stated age",
  ended_unreported: "ended, not reported: the agent no longer holds the run and its end event never arrived",
};

/**
 * Possible losses: each part a count linking to exactly the list it counts (runs by outcome, dead letters by kind and
 * time, the agents of a class). Parts at zero are left out; when every part is zero it says what was counted, never
 * that nothing was lost: a loss nothing reported cannot be counted.
 */
export function PossibleLossesSection(props: { losses: PossibleLosses; hotWindowHours: number | undefined }) {
  const { losses } = props;
  const runs = NOT_KNOWN_OUTCOMES.reduce((a, o) => a + losses.runs[o].n, 0);
  const lost = LOSS_KINDS.reduce((a, k) => a + losses.lost.byKind[k], 0);
  const kept = props.hotWindowHours === undefined ? "of the runs the console keeps" : `of the runs the console keeps (their last ${props.hotWindowHours} h)`;
  if (noPossibleLoss(losses))
    return (
      <section class="possible-losses" data-testid="possible-losses" data-none="true">
        <h2>Possible losses</h2>
        <p class="muted" data-testid="no-possible-losses">
          No possible losses in the last 24 h: no run {kept} has an end the console does not know, no message was counted lost on the way in, and every agent
          class the console may act on has sent events. This counts what the console saw go missing; a loss nothing reported cannot be counted.
        </p>
      </section>
    );
  return (
    <section class="possible-losses alert" data-testid="possible-losses" data-runs={String(runs)} data-lost={String(lost)}>
      <h2>Possible losses</h2>
      <ul>
        {NOT_KNOWN_OUTCOMES.filter((o) => losses.runs[o].n > 0).map((o) => (
          <li data-testid={`loss-runs-${o}`}>
            <Figure href={listHref("runs", { outcome: o })} value={losses.runs[o]}>
              {runsWord(losses.runs[o])}
            </Figure>{" "}
            {NOT_KNOWN_WORDS[o]} (counted {kept}).
          </li>
        ))}
        {LOSS_KINDS.filter((k) => losses.lost.byKind[k] > 0).map((k) => (
          <li data-testid={`loss-events-${k}`}>
            <Figure href={listHref("deadLetters", { kind: k, since: losses.since })} value={{ n: losses.lost.byKind[k], capped: losses.lost.capped }}>
              {losses.lost.byKind[k] === 1 ? "1 message" : `${capped({ n: losses.lost.byKind[k], capped: losses.lost.capped })} messages`}
            </Figure>{" "}
            lost on the way in the last 24 h: {LOSS_KIND_WORDS[k]}.
          </li>
        ))}
        {losses.unheardClasses.length ? (
          <li data-testid="loss-unheard-classes" data-count={String(losses.unheardClasses.length)}>
            {losses.unheardClasses.length === 1 ? "1 agent class" : `${count(losses.unheardClasses.length)} agent classes`} the console may act on
            (AGENT_CLASSES) never sent an event (
            {losses.unheardClasses.map((c, i) => (
              <>
                {i ? ", " : ""}
                <a href={listHref("agents", { agentClass: c })}>{c}</a>
              </>
            ))}
            ): either none of their agents has run yet, or their Worker's <code>tail_consumers</code> line is missing.
          </li>
        ) : null}
      </ul>
      {losses.lost.capped ? <p class="muted">The lost messages are counted among the newest dead letters only: there are more than one scan covers.</p> : null}
    </section>
  );
}

const runsWord = (c: { n: number; capped: boolean }) => (c.n === 1 && !c.capped ? "1 run" : `${capped(c)} runs`);

/** The incidents likely to exhaust soon, each linking to its budget panel. */
function ExhaustingCard(props: { soon: ExhaustingSoon; now: number }) {
  const { items, windowMs, bounded } = props.soon;
  const minutes = Math.round(windowMs / 60_000);
  return (
    <section class={`exhausting ${items.length ? "alert" : ""}`} data-testid="exhausting-soon" data-count={String(items.length)}>
      <h2>Likely to exhaust in the next {minutes} min</h2>
      {items.length ? (
        <table>
          <thead>
            <tr>
              <th>incident</th>
              <th>agent</th>
              <th class="num">attempts</th>
              <th>forecast</th>
            </tr>
          </thead>
          <tbody>
            {items.map((i) => (
              <tr data-testid="exhausting-incident" data-incident-id={i.incidentId} data-forecast-at={String(i.forecast.at)}>
                <td data-label="incident">
                  <a href={`${incidentHref(i.incidentId, i)}#recovery-budget`}>{i.incidentId}</a>
                </td>
                <td data-label="agent">
                  {i.agentClass} / {i.agentName}
                </td>
                <td class="num" data-label="attempts">
                  {count(i.attempts)}
                  {i.maxAttempts !== null ? ` of ${count(i.maxAttempts)}` : ""}
                </td>
                <td data-label="forecast">{forecastWords(i.forecast, props.now)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted">No open incident is forecast to exhaust in the next {minutes} minutes.</p>
      )}
      <NotForecastList soon={props.soon} minutes={minutes} />
      {bounded ? <p class="muted">Forecast over the most recently active open incidents only: there are more than one scan covers.</p> : null}
    </section>
  );
}

/** The open incidents the card cannot forecast, by why (console/budget-words.ts notForecastLines). */
function NotForecastList(props: { soon: ExhaustingSoon; minutes: number }) {
  const lines = notForecastLines(props.soon.notForecast, props.minutes);
  if (!lines.length)
    return props.soon.items.length ? null : (
      <p class="muted" data-testid="not-forecast-none">
        No open incident to forecast.
      </p>
    );
  return (
    <ul class="muted" data-testid="not-forecast">
      {lines.map((l) => (
        <li data-testid={l.testId} data-count={String(l.n)}>
          {l.text}
        </li>
      ))}
    </ul>
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
      <thead>
        <tr>
          <th>running</th>
          {RUN_KINDS.map((k) => (
            <th class="num">{KIND_LABEL[k]}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        <tr>
          <td data-label="running">all</td>
          {RUN_KINDS.map((k) => (
            <td class="num" data-label={KIND_LABEL[k]}>
              <Figure href={listHref("runs", { kind: k, outcome: "running" })} value={byKind[k]} testId={`running-${k}`} />
            </td>
          ))}
        </tr>
        <tr>
          <td data-label="running" title="a reconciliation found it alive after its last event">
            confirmed by the agent
          </td>
          {RUN_KINDS.map((k) => (
            <td class="num" data-label={KIND_LABEL[k]} data-testid={`confirmed-${k}`}>
              <Figure href={listHref("runs", { kind: k, outcome: "running", confirmed: "true" })} value={{ n: byKind[k].confirmed, capped: byKind[k].capped }}>
                {count(byKind[k].confirmed)}
              </Figure>
              {byKind[k].capped ? ` of the newest ${count(byKind[k].n)}` : ""}
            </td>
          ))}
        </tr>
        <tr>
          <td data-label="running" title="running as far as its events tell; no reconciliation has confirmed it since">
            unconfirmed
          </td>
          {RUN_KINDS.map((k) => (
            <td class="num" data-label={KIND_LABEL[k]} data-testid={`unconfirmed-${k}`}>
              <Figure
                href={listHref("runs", { kind: k, outcome: "running", confirmed: "false" })}
                value={{ n: byKind[k].n - byKind[k].confirmed, capped: byKind[k].capped }}
              >
                {count(byKind[k].n - byKind[k].confirmed)}
              </Figure>
            </td>
          ))}
        </tr>
      </tbody>
    </table>
  );
}

/** The events list of a series between two times (inclusive): what the chart counted there. */
const eventsHref = (series: string, since: number, until: number) => listHref("events", { type: seriesTypes(series).join(","), since, until });

/**
 * The chart's text alternative: each series' total and busiest 5 minutes, and (in a disclosure) the events
 * per hour for every hour that had some, with times as <time> elements so the UTC/local toggle applies.
 * Every number links to the events it counts: a rollup bucket [b, b + 5 min) holds the events whose time is in it.
 */
export function ChartData(props: { series: EventSeries }) {
  const { buckets, series } = props.series;
  const names = Object.keys(series);
  const first = buckets[0] ?? 0;
  const end = (buckets[buckets.length - 1] ?? 0) + BUCKET_MS;
  // Hours, not 5-minute buckets: 24 rows read better than 288 (the summary names each series' busiest 5 minutes).
  const hours = new Map<number, number[]>();
  buckets.forEach((b, i) => {
    const h = Math.floor(b / 3_600_000) * 3_600_000;
    const row = hours.get(h) ?? names.map(() => 0);
    names.forEach((n, j) => {
      row[j]! += series[n]![i] ?? 0;
    });
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
            const peak = Math.max(0, ...vals);
            return { n, total, peak, at: buckets[vals.indexOf(peak)] ?? first };
          })
          .map((s, i) => (
            <span>
              {i ? "; " : ""}
              {s.n} <Figure href={eventsHref(s.n, first, end - 1)} value={{ n: s.total, capped: false }} />
              {s.total ? (
                <>
                  {" "}
                  (peak <Figure href={eventsHref(s.n, s.at, s.at + BUCKET_MS - 1)} value={{ n: s.peak, capped: false }} /> at <Time t={s.at} />)
                </>
              ) : null}
            </span>
          ))}
        .
      </p>
      <details>
        <summary>The chart as a table</summary>
        {rows.length ? (
          <table data-testid="chart-table">
            <thead>
              <tr>
                <th>hour from</th>
                {names.map((n) => (
                  <th class="num">{n}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map(([h, ns]) => (
                <tr>
                  <td data-label="hour from">
                    <Time t={h} />
                  </td>
                  {ns.map((n, j) => (
                    <td class="num" data-label={names[j]!}>
                      <Figure href={eventsHref(names[j]!, Math.max(h, first), Math.min(h + 3_600_000, end) - 1)} value={{ n, capped: false }} />
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        ) : (
          <p class="muted" data-testid="chart-empty">
            No events in the last 24 hours.
          </p>
        )}
      </details>
    </div>
  );
}
