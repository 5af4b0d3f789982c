import type { AlertKind } from "../../src/store/alerts";
import type { Deploy } from "../../src/store/read-models";
import type { SuppressedAlerts } from "../../src/store/read-models/alerts";
import { BUCKET_MS } from "../../src/store/read-models/overview";
import type { ActiveAlertKind, NowFigure, OverviewNow } from "../../src/store/read-models/overview-now";
import { ALERT_KIND_LABEL, SuppressedAlertsNote } from "../components/suppressed-alerts";
import { Time } from "../components/time";
import type { PageContext } from "../layout";
import { LISTS, listHref } from "../links";
import { Figure } from "./overview";

/** Counts in sentences, with separators (figures themselves go through capped()). */
const count = new Intl.NumberFormat("en-US");

/** The banner's headline per alert kind: the kind's one label (suppressed-alerts.tsx), capitalised. */
const bannerTitle = (kind: string): string => {
  const label = ALERT_KIND_LABEL[kind as AlertKind] ?? kind;
  return label.charAt(0).toUpperCase() + label.slice(1);
};

const minutesOf = (ms: number) => Math.round(ms / 60_000);

/** The events of `types` from `since` (through `until` when given): exactly what a rollup figure counts. */
const eventsHref = (types: readonly string[], since: number, until?: number) => listHref("events", { type: types.join(","), since, until });

/** The list a recent or previous figure counts, by what it counts (NowFigure.counts); null when it is not counted. */
function windowHref(f: NowFigure, since24h: number, since: number, until?: number): string | null {
  if (f.counts === "events") return eventsHref(f.types, since, until);
  if (f.counts === "incidents") return listHref("incidents", { status: "exhausted", since: since24h, statusSince: since, statusUntil: until });
  if (f.counts === "ops") return listHref("ops", { since, until });
  return null;
}

/** How many classes "what burns" names before "and N more". */
const BURNING_SHOWN = 3;

/**
 * The first screen: the alert banner (and how many alerts the budgets suppressed in the hour), whether anything burns in the recent window and what, the recent figures
 * beside the window before and the 24 h, and a chart of the last hour at 5-minute resolution with its deploys.
 * It refreshes on its own (an htmx fragment): every read behind it is bounded (overview-now.ts).
 */
export function OverviewNowSection(props: { ctx: PageContext; now: OverviewNow; deploys: Deploy[]; suppressed?: SuppressedAlerts }) {
  const { now } = props;
  const w = now.window;
  const minutes = windowWords(w.recentMs);
  const burning = !now.quiet;
  const exhausted = now.figures.find((f) => f.key === "exhausted")!;
  const hot = now.figures.filter((f) => f.burns && f.recent > 0);
  const marks = props.deploys.filter((d) => d.firstSeen >= w.chartSince);
  return (
    <section
      class={`now ${burning ? "burning" : "calm"}`}
      data-testid="overview-now"
      data-burning={String(burning)}
      data-recent-minutes={String(w.recentMs / 60_000)}
      aria-labelledby="now-heading"
    >
      <AlertBanner alerts={now.alerts} />
      {/* Alerts the hourly budgets never sent: said beside the banner, linking to them on /alerts (only when some were). */}
      {props.suppressed?.alerts ? <SuppressedAlertsNote s={props.suppressed} window="last hour" /> : null}
      <h2 id="now-heading" data-testid="now-heading">
        {burning ? "Burning now" : "Quiet now"}
        <span class="muted"> · last {windowWords(w.recentMs)}</span>
      </h2>
      <BurningClasses now={now} />
      <p class="now-status" data-testid="now-status">
        {burning ? (
          hot.map((f, i) => (
            <>
              {i ? "; " : ""}
              <strong>
                {count.format(f.recent)} {f.label.toLowerCase()}
              </strong>{" "}
              since <Time t={w.recentSince} /> ({trendWords(f, minutes)})
            </>
          ))
        ) : (
          <>
            No exhaustions and no ambiguous ops since <Time t={w.recentSince} />.
          </>
        )}
        {burning && exhausted.recent > 0 ? (
          <>
            {" "}
            <a href={listHref("incidents", { status: "exhausted", since: w.recentSince })} data-testid="now-exhausted-incidents">
              Which incidents exhausted
            </a>
          </>
        ) : null}
      </p>
      <div class="now-grid">
        <table class="now-figures" data-testid="now-figures">
          <thead>
            <tr>
              <th>events</th>
              <th class="num">last {minutes}</th>
              <th class="num">{minutes} before</th>
              <th>trend</th>
              <th class="num">last hour</th>
              <th class="num">24 h</th>
            </tr>
          </thead>
          <tbody>
            {now.figures.map((f) => (
              <tr class={f.burns && f.recent > 0 ? "alert" : ""} data-testid={`now-${f.key}`}>
                <th scope="row">{f.label}</th>
                <td class="num">
                  <WindowFigure
                    f={f}
                    href={windowHref(f, w.since24h, w.recentSince)}
                    value={{ n: f.recent, capped: f.recentCapped }}
                    testId={`now-${f.key}-recent`}
                  />
                </td>
                <td class="num">
                  <WindowFigure
                    f={f}
                    href={windowHref(f, w.since24h, w.previousSince, w.recentSince - 1)}
                    value={{ n: f.previous, capped: f.previousCapped }}
                    testId={`now-${f.key}-previous`}
                  />
                </td>
                <td data-testid={`now-${f.key}-trend`} data-trend={trendOf(f)}>
                  {f.counts === null ? <NotCounted /> : trendMark(f)}
                </td>
                <td class="num">
                  <Figure href={eventsHref(f.types, w.chartSince)} value={{ n: f.chart, capped: false }} />
                </td>
                <td class="num">
                  {f.key === "exhausted" ? (
                    // Incidents, not events: the same count as the card below, stopped at 100 so the first screen stays cheap.
                    <Figure
                      href={listHref("incidents", { status: "exhausted", since: w.since24h })}
                      value={now.exhaustions24h}
                      testId="now-exhausted-24h"
                      title="incidents exhausted, first seen in the last 24 h"
                    />
                  ) : (
                    // Counted in the 24 h cards below (a full count here would cost the first screen its bound).
                    <span class="muted" title="see the 24 h cards below">
                      —<span class="visually-hidden"> see the 24 h cards below</span>
                    </span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <RecentChart now={now} marks={marks} />
      </div>
    </section>
  );
}

/** The recent window in words: "15 min", "1 min", "30 s". */
export function windowWords(ms: number): string {
  return ms % 60_000 === 0 ? `${minutesOf(ms)} min` : `${Math.round(ms / 1000)} s`;
}

/** A recent or previous figure: its list link, or a dash where the window has no exact source for it. */
function WindowFigure(props: { f: NowFigure; href: string | null; value: { n: number; capped: boolean }; testId: string }) {
  if (props.href === null) return <NotCounted />;
  const title =
    props.f.counts === "incidents"
      ? "incidents exhausted, first seen in this window"
      : props.f.counts === "ops"
        ? "ambiguous ops last seen in this window"
        : undefined;
  return <Figure href={props.href} value={props.value} testId={props.testId} title={title} />;
}

/** Why a cell is empty: a window shorter than a 5-minute rollup bucket cannot count these events exactly. */
function NotCounted() {
  return (
    <span class="muted" title="counted per 5-minute bucket only: see the last hour">
      —<span class="visually-hidden"> counted per 5-minute bucket only: see the last hour</span>
    </span>
  );
}

/**
 * What burns: the classes of the incidents that exhausted in the recent window, most first, each linking to those
 * incidents. Said only when there are some; the heading says the rest.
 */
function BurningClasses(props: { now: OverviewNow }) {
  const { classes, capped } = props.now.burning;
  if (!classes.length) return null;
  const since = props.now.window.recentSince;
  const shown = classes.slice(0, BURNING_SHOWN);
  const more = classes.length - shown.length;
  return (
    <p class="now-what" data-testid="now-burning">
      Exhausting{capped ? " (counted over the newest incidents)" : ""}:{" "}
      {shown.map((c, i) => (
        <>
          {i ? ", " : ""}
          <a
            href={listHref("incidents", { status: "exhausted", agentClass: c.agentClass, since: props.now.window.since24h, statusSince: since })}
            data-testid="now-burning-class"
            data-agent-class={c.agentClass}
            data-n={String(c.n)}
          >
            <strong>{c.agentClass}</strong> ({count.format(c.n)} {c.n === 1 ? "incident" : "incidents"})
          </a>
        </>
      ))}
      {more > 0 ? ` and ${count.format(more)} more ${more === 1 ? "class" : "classes"}` : ""}
    </p>
  );
}

type Trend = "rising" | "falling" | "steady" | "none";
const trendOf = (f: NowFigure): Trend =>
  f.recent === 0 && f.previous === 0 ? "none" : f.recent > f.previous ? "rising" : f.recent < f.previous ? "falling" : "steady";

function trendMark(f: NowFigure) {
  const t = trendOf(f);
  if (t === "none") return <span class="muted">none</span>;
  const diff = f.recent - f.previous;
  const sign = diff > 0 ? "+" : diff < 0 ? "−" : "±";
  return (
    <span class={`trend ${t}`}>
      {t === "rising" ? "▲" : t === "falling" ? "▼" : "="} {t} ({sign}
      {count.format(Math.abs(diff))})
    </span>
  );
}

const trendWords = (f: NowFigure, span: string) => {
  const t = trendOf(f);
  const before = `${count.format(f.previous)} the ${span} before`;
  return t === "rising" ? `up from ${before}` : t === "falling" ? `down from ${before}` : `as many as the ${span} before`;
};

/** Alerts of the last hour, storms and exhaustion waves first, each linking to its list. */
function AlertBanner(props: { alerts: ActiveAlertKind[] }) {
  if (!props.alerts.length) {
    return (
      <p class="muted alert-banner-none" data-testid="alert-banner-none">
        No alerts raised in the last hour.
      </p>
    );
  }
  return (
    <section class="alert-banner" data-testid="alert-banner" aria-label="Alerts raised in the last hour">
      <ul>
        {props.alerts.map((a) => (
          <li class={`banner-alert kind-${a.kind}`} data-testid="banner-alert" data-kind={a.kind} data-n={String(a.n)}>
            <strong>{bannerTitle(a.kind)}</strong>: {a.newest.summary} (<Time t={a.newest.at} />)
            <span class="banner-meta">
              {" "}
              · {a.capped ? "at least " : ""}
              {count.format(a.n)} {a.n === 1 ? "alert" : "alerts"} in the last hour
              {a.undelivered ? `, ${count.format(a.undelivered)} not delivered` : ""} ·{" "}
              <a href={listHref("alerts", { kind: a.kind })} data-testid="banner-alert-list">
                the {ALERT_KIND_LABEL[a.kind as AlertKind] ?? a.kind} alerts
              </a>
              {a.kind === "deploy_storm" ? (
                <>
                  {" "}
                  · <a href={LISTS.deploys}>incidents by version</a>
                </>
              ) : null}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

/**
 * The last hour (or two recent windows, if longer) at 5-minute resolution: a burst fills the chart instead of
 * its last few pixels, and deploys are labelled marks. The same chart code as the 24 h one (console.js).
 */
function RecentChart(props: { now: OverviewNow; marks: Deploy[] }) {
  const { chart, window: w, figures } = props.now;
  return (
    <div class="now-chart">
      <div class="chart-box chart-box-short">
        <canvas
          id="recent-chart"
          role="img"
          aria-label="Chart of events per 5 minutes in the last hour"
          aria-describedby="recent-chart-summary"
          data-chart={JSON.stringify({
            buckets: chart.buckets,
            series: chart.series,
            bucketMs: BUCKET_MS,
            // Each series is a figure: a click on a bucket opens exactly the events it counts (console.js).
            types: Object.fromEntries(figures.map((f) => [f.label, f.types])),
          })}
          data-deploys={JSON.stringify(props.marks.map((d) => ({ version: d.version, at: d.firstSeen })))}
        />
      </div>
      <p id="recent-chart-summary" class="muted">
        Events per 5 minutes since <Time t={w.chartSince} />:{" "}
        {figures.map((f, i) => (
          <>
            {i ? "; " : ""}
            {f.label.toLowerCase()} <Figure href={eventsHref(f.types, w.chartSince)} value={{ n: f.chart, capped: false }} />
          </>
        ))}
        .{" "}
        {props.marks.length ? (
          <span data-testid="recent-deploys">
            Deploys:{" "}
            {props.marks.map((d, i) => (
              <>
                {i ? ", " : ""}
                <a href={listHref("incidents", { version: d.version })}>{d.version}</a> at <Time t={d.firstSeen} />
              </>
            ))}
            .
          </span>
        ) : (
          "No deploy in this hour."
        )}
      </p>
    </div>
  );
}
