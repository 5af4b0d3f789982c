import type { FoundBeforeHot } from "../../src/store/history/before-hot";
import type { HistoryScan } from "../../src/store/history/read";
import { RUN_KINDS, RUN_OUTCOMES, type Run, type RunWithSnapshot, type TimelinePage } from "../../src/store/read-models";
import { resumedRunOf } from "../../src/store/read-models/runs";
import { FLEET_COMPLETED_MAX_HOURS } from "../../src/store/read-models/runs-fleet-history";
import type { CompletedFromHistory, RunsListPage } from "../../src/store/read-models/runs-history";
import { ColumnChooser, ColumnTable, columnSet } from "../components/columns";
import { ExportLinks } from "../components/export-links";
import { FilterForm, SelectFilter, TextFilter } from "../components/filters";
import { HistoryFacts, HistoryReadSpan, historyReadAttrs } from "../components/from-history";
import { JsonView, parsePreview } from "../components/json-view";
import { ListPager } from "../components/pager";
import { Status } from "../components/status";
import { Ago, Time } from "../components/time";
import { TimePresets } from "../components/time-presets";
import { PagedTimeline, Timeline } from "../components/timeline";
import { ago, bytes, elapsed, iso } from "../format";
import { Layout, type PageContext } from "../layout";
import { agentHref, detailHref, LISTS, listHref, runHref } from "../links";

type Query = Record<string, string | undefined>;

/** How each kind of run reads on a page. */
export const KIND_LABEL: Record<string, string> = { fiber: "fiber", managed_fiber: "managed fiber", task: "task", chat_turn: "chat turn" };
const kindLabel = (k: string) => (Object.hasOwn(KIND_LABEL, k) ? KIND_LABEL[k]! : k);

/** A run's status: its outcome, or running (with a Task's live phase, and whether the agent confirmed it). */
export function RunStatus(props: { run: Run }) {
  const r = props.run;
  if (r.outcome !== null) return <Status value={r.outcome} />;
  return (
    <>
      <Status value="running" />
      {r.phase && r.phase !== "running" ? <span class="muted"> · {r.phase}</span> : null}
      {r.confirmed ? (
        <span class="muted" data-testid="confirmed" title={`the agent said it is alive at ${iso(r.confirmedAt)}`}>
          {" "}
          · confirmed
        </span>
      ) : (
        <span class="muted" title="no reconciliation has confirmed it since its last event">
          {" "}
          · unconfirmed
        </span>
      )}
    </>
  );
}

/** What a run's step is to it: where it is, where it was cut off, or (ended) the last one known. */
function stepLabel(f: Run): string {
  if (f.outcome !== null) return "last step";
  return f.phase === "interrupted" ? "interrupted in step" : f.phase === "waiting" ? "waiting in step" : "at step";
}

/** The runs list's columns: the run (its link), then those `cols=` picks. */
export const RUN_COLUMN_SET = columnSet<Run, { now: number }>(
  "runs",
  {
    id: "run",
    header: "run",
    fields: ["fiberId", "agentClass", "agentName"],
    cell: (f) => (
      <a class="mono" href={detailHref("runs", f.fiberId, f)}>
        {f.fiberId}
      </a>
    ),
  },
  [
    { id: "kind", header: "kind", fields: ["kind"], cell: (f) => kindLabel(f.kind) },
    {
      id: "agent",
      header: "agent",
      fields: ["agentClass", "agentName"],
      cell: (f) => (
        <a href={agentHref(f)}>
          {f.agentClass} · {f.agentName}
        </a>
      ),
    },
    { id: "name", header: "name", fields: ["name"], cell: (f) => f.name },
    { id: "started", header: "started", fields: ["startedAt"], cell: (f, x) => <Ago t={f.startedAt} now={x.now} /> },
    {
      id: "duration",
      header: "duration",
      fields: ["startedAt", "endedAt"],
      cell: (f, x) => elapsed(f.startedAt ?? f.firstSeen, f.endedAt ?? (f.outcome === null ? x.now : f.lastSeen)),
    },
    {
      id: "status",
      header: "status",
      fields: ["outcome", "phase", "confirmed", "reason", "error"],
      cell: (f) => (
        <>
          <RunStatus run={f} />
          {f.reason ? <div class="muted">{f.reason}</div> : null}
          {f.error ? (
            <div class="warn" data-testid="run-error">
              {f.error}
            </div>
          ) : null}
        </>
      ),
    },
    {
      id: "step",
      header: "step",
      fields: ["step", "statusMessage"],
      attrs: () => ({ "data-testid": "run-step" }),
      cell: (f) => (
        <>
          {f.step ?? "—"}
          {f.statusMessage ? (
            <div class="muted" data-testid="run-status-message">
              {f.statusMessage}
            </div>
          ) : null}
        </>
      ),
    },
    { id: "attempt", header: "attempt", fields: ["attempt"], cell: (f) => f.attempt ?? "—" },
    { id: "snapshot", header: "snapshot", num: true, fields: ["snapshotBytes"], cell: (f) => bytes(f.snapshotBytes) },
  ],
);

/** Every run in the fleet (fibers, managed fibers, Tasks runs, chat turns), from the projection. */
/**
 * The runs list. `page.completedFromHistory`: the list added the healthy completed runs (they left D1) from the R2
 * history, an agent's or the fleet's, and says the span it read.
 */
export function RunsPage(props: { ctx: PageContext; query: Query; page: RunsListPage; cols?: readonly string[] }) {
  const q = props.query;
  const read = props.page.completedFromHistory;
  return (
    <Layout ctx={props.ctx} title="Runs" active={LISTS.runs}>
      <FilterForm action={LISTS.runs}>
        <SelectFilter name="kind" label="kind" value={q.kind} options={RUN_KINDS} />
        <SelectFilter name="outcome" label="status" value={q.outcome} options={RUN_OUTCOMES} />
        <SelectFilter name="confirmed" label="confirmed by the agent" value={q.confirmed} options={["true", "false"]} />
        <TextFilter name="agentClass" label="agent class" value={q.agentClass} />
        <TextFilter name="agentName" label="agent name" value={q.agentName} />
        <TextFilter name="since" label="since" value={q.since} placeholder="1h or 2026-11-21T00:00Z" />
        <ColumnChooser set={RUN_COLUMN_SET} cols={props.cols ?? []} />
      </FilterForm>
      <ExportLinks list="runs" query={q} />
      {read && q.agentClass && q.agentName ? (
        <p
          class="muted"
          data-testid="runs-completed-from-history"
          data-scope="agent"
          data-found={String(read.found)}
          {...historyReadAttrs({ ...read, events: [] })}
        >
          Runs that completed healthily leave the hot store when they end: this agent's are read from history, its last {read.hours} hours (
          <HistoryReadSpan found={{ ...read, events: [] }} />
          ), {read.found} listed from there.
        </p>
      ) : read ? (
        <FleetCompletedNote query={q} read={read} next={props.page.next} />
      ) : null}
      <TimePresets path={LISTS.runs} query={q} />
      <ColumnTable
        set={RUN_COLUMN_SET}
        rows={props.page.items}
        x={{ now: props.ctx.now }}
        testId="fibers"
        cols={props.cols}
        rowAttrs={(f) => ({ "data-kind": f.kind })}
      />
      <ListPager path={LISTS.runs} query={q} page={props.page} noun="runs" empty="No runs match." />
    </Layout>
  );
}

/**
 * Where a fleet-wide list's completed runs come from: the fleet's history over the stated span, of which this page read
 * a bounded part. When the page's budget ended before the span did, it says what it covered and offers the older part,
 * so an empty page never reads as "no completed runs".
 */
function FleetCompletedNote(props: { query: Query; read: CompletedFromHistory; next: string | null }) {
  const { read } = props;
  const found = { ...read, events: [] };
  const { cursor: _c, ...rest } = props.query;
  const short = !read.scan.complete;
  return (
    <p
      class="muted"
      data-testid="runs-completed-from-history"
      data-scope="fleet"
      data-found={String(read.found)}
      data-span-from={String(read.from)}
      {...historyReadAttrs(found)}
    >
      Runs that completed healthily leave the hot store when they end: the fleet's are read from history over the last {read.hours} hours (since{" "}
      <Time t={read.from} />
      ). This page <HistoryReadSpan found={found} />, {read.found} listed from there.
      {short && props.next ? (
        <>
          {" "}
          <a href={listHref("runs", { ...rest, cursor: props.next })} data-testid="runs-completed-older">
            Read older
          </a>
        </>
      ) : null}
      {read.hours < FLEET_COMPLETED_MAX_HOURS ? (
        <>
          {" "}
          <a href={listHref("runs", { ...rest, hours: FLEET_COMPLETED_MAX_HOURS })} data-testid="runs-completed-wider">
            Read the last {FLEET_COMPLETED_MAX_HOURS} hours
          </a>
        </>
      ) : null}
    </p>
  );
}

/**
 * One run: what it is, how it ended, its last-known snapshot and its events. `fromHistory`: the run completed healthily and left the hot store when it ended, so it was folded from
 * the R2 history (the read's span), by the mapping ingest uses.
 */
export function RunTimelinePage(props: {
  ctx: PageContext;
  fiber: RunWithSnapshot;
  events: TimelinePage;
  query: Query;
  fromHistory?: { events?: readonly unknown[]; scan: HistoryScan; from: number; to: number };
}) {
  const f = props.fiber;
  const snap = parsePreview(f.snapshotPreview);
  const kind = kindLabel(f.kind);
  const read = props.fromHistory;
  return (
    <Layout ctx={props.ctx} title={`${kind[0]!.toUpperCase()}${kind.slice(1)} ${f.name}`} active={LISTS.runs}>
      {read ? (
        <p class="muted" data-testid="run-from-history" {...historyReadAttrs({ ...read, events: read.events ?? [] })}>
          This run completed healthily, so the hot store no longer holds it: it is folded from the R2 history,{" "}
          <HistoryReadSpan found={{ ...read, events: read.events ?? [] }} />.
        </p>
      ) : null}
      <dl class="facts" data-testid="run-facts" data-kind={f.kind}>
        <dt>{f.kind === "chat_turn" ? "request" : f.kind === "task" ? "task run" : "fiber"}</dt>
        <dd class="mono">{f.fiberId}</dd>
        <dt>kind</dt>
        <dd>{kind}</dd>
        <dt>agent</dt>
        <dd>
          <a href={agentHref(f)}>
            {f.agentClass} · {f.agentName}
          </a>
        </dd>
        {f.definition ? (
          <>
            <dt>definition</dt>
            <dd>{f.definition}</dd>
          </>
        ) : null}
        <dt>status</dt>
        <dd>
          <RunStatus run={f} />
        </dd>
        {f.reason ? (
          <>
            <dt>why</dt>
            <dd>
              {resumedRunOf(f.reason) ? (
                // A recovery hook that started the work again: the new run, one click away.
                <span data-testid="run-resumed-as">
                  its recovery hook started run <a href={runHref(resumedRunOf(f.reason)!, f)}>{resumedRunOf(f.reason)}</a>
                </span>
              ) : (
                f.reason
              )}
            </dd>
          </>
        ) : null}
        {f.attempt !== null ? (
          <>
            <dt>attempt</dt>
            <dd>{f.attempt}</dd>
          </>
        ) : null}
        {f.outcome === null && f.phase === "waiting" && f.wakeAt ? (
          <>
            <dt>wakes</dt>
            <dd>
              <Time t={f.wakeAt} ms />
            </dd>
          </>
        ) : null}
        {f.step ? (
          <>
            <dt>{stepLabel(f)}</dt>
            <dd data-testid="run-step">{f.step}</dd>
          </>
        ) : null}
        {f.statusMessage ? (
          <>
            <dt>{f.outcome === null ? "status" : "last status"}</dt>
            <dd data-testid="run-status-message">{f.statusMessage}</dd>
          </>
        ) : null}
        <dt>started</dt>
        <dd>
          <Time t={f.startedAt} ms />
        </dd>
        <dt>ended</dt>
        <dd>
          <Time t={f.endedAt} ms />
        </dd>
        {f.confirmedAt ? (
          <>
            <dt>last confirmed alive</dt>
            <dd>
              <Time t={f.confirmedAt} ms />
            </dd>
          </>
        ) : null}
        {f.error ? (
          <>
            <dt>error</dt>
            <dd class="warn">{f.error}</dd>
          </>
        ) : null}
      </dl>
      <h2>Last-known snapshot {f.snapshotAt ? <span class="muted">({ago(f.snapshotAt, props.ctx.now)})</span> : null}</h2>
      {f.snapshotPreview !== null ? (
        <JsonView value={snap.value} rawText={snap.rawText} size={f.snapshotBytes} />
      ) : (
        // Not "never stashed": the SDK publishes no event for a stash, so an agent observed by its tail alone may have stashed.
        <p class="muted" data-testid="snapshot-unknown">
          None reported. Only the telemetry package's outbox reports stashes (the SDK publishes no event for one), so whether this run stashed is not known
          here.
        </p>
      )}
      <h2>Events</h2>
      <PagedTimeline page={props.events} path={detailHref("runs", f.fiberId)} query={props.query} dir="later" traceUrl={props.ctx.traceUrl} />
    </Layout>
  );
}

/**
 * A run the hot store no longer holds: finished runs leave D1 once their last activity is older than the hot
 * window (open ones after the retention period). What the R2 history has of it, and how far that read looked.
 */
export function RunFromHistoryPage(props: { ctx: PageContext; id: string; found: FoundBeforeHot; hotWindowHours: number }) {
  const { id, found } = props;
  return (
    <Layout ctx={props.ctx} title={`Run ${id}`} active={LISTS.runs}>
      <section data-testid="run-from-history" {...historyReadAttrs(found)}>
        <p>
          This run has left the hot store: finished runs stay there {props.hotWindowHours} hours after their last activity. The history below is what the R2
          history holds of it, <HistoryReadSpan found={found} />.
        </p>
        <dl class="facts">
          <dt>run</dt>
          <dd class="mono">{id}</dd>
          <HistoryFacts found={found} />
        </dl>
      </section>
      <h2>Events</h2>
      <Timeline events={found.events} traceUrl={props.ctx.traceUrl} />
    </Layout>
  );
}
