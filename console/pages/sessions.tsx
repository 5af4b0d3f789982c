import { type OpRow, type Page, SESSION_STATUSES, type SessionRow, type TimelinePage } from "../../src/store/read-models";
import { type ActionAvailability, AdminActions, AFTER_ACTION_TRIGGER } from "../components/actions";
import { ColumnChooser, ColumnTable, columnSet } from "../components/columns";
import { ExportLinks } from "../components/export-links";
import { FilterForm, SelectFilter, TextFilter } from "../components/filters";
import { OpsTable } from "../components/ops-table";
import { ListPager } from "../components/pager";
import type { ResolveAvailability } from "../components/resolve-op";
import { Status } from "../components/status";
import { Ago, Time } from "../components/time";
import { TimePresets } from "../components/time-presets";
import { PagedTimeline } from "../components/timeline";
import { count } from "../format";
import { Layout, type PageContext } from "../layout";
import { agentHref, detailHref, LISTS } from "../links";

type Query = Record<string, string | undefined>;

/** The sessions list's columns: the session (its link), then those `cols=` picks. */
export const SESSION_COLUMN_SET = columnSet<SessionRow, { now: number }>(
  "sessions",
  {
    id: "session",
    header: "session",
    fields: ["sessionName", "agentClass", "agentName"],
    cell: (s) => <a href={detailHref("sessions", s.sessionName, s)}>{s.sessionName}</a>,
  },
  [
    { id: "agentClass", header: "agent class", fields: ["agentClass"], cell: (s) => s.agentClass },
    { id: "status", header: "status", fields: ["status"], cell: (s) => <Status value={s.status ?? "unknown"} /> },
    {
      id: "lastEvent",
      header: "last event",
      fields: ["lastEventType", "lastEventAt"],
      cell: (s, x) => (
        <>
          {s.lastEventType} <Ago t={s.lastEventAt} now={x.now} class="muted" />
        </>
      ),
    },
    { id: "recoveries", header: "recoveries", num: true, fields: ["recoveryCount"], cell: (s) => count(s.recoveryCount) },
    { id: "lastTurn", header: "last turn", fields: ["lastTurnSeq"], cell: (s) => s.lastTurnSeq ?? "—" },
  ],
);

/** Sessions with their last reported status, last event and recovery count. */
export function SessionsPage(props: { ctx: PageContext; query: Query; page: Page<SessionRow>; cols?: readonly string[] }) {
  const q = props.query;
  return (
    <Layout ctx={props.ctx} title="Sessions" active={LISTS.sessions}>
      <FilterForm action={LISTS.sessions}>
        <SelectFilter name="status" label="status" value={q.status} options={SESSION_STATUSES} />
        <TextFilter name="agentClass" label="agent class" value={q.agentClass} />
        <TextFilter name="since" label="since" value={q.since} placeholder="1h or 2026-11-21T00:00Z" />
        <ColumnChooser set={SESSION_COLUMN_SET} cols={props.cols ?? []} />
      </FilterForm>
      <ExportLinks list="sessions" query={q} />
      <TimePresets path={LISTS.sessions} query={q} />
      <ColumnTable set={SESSION_COLUMN_SET} rows={props.page.items} x={{ now: props.ctx.now }} testId="sessions" cols={props.cols} />
      <ListPager path={LISTS.sessions} query={q} page={props.page} noun="sessions" empty="No sessions match." />
    </Layout>
  );
}

/** One session: status, its event timeline (newest first), and the admin actions. */
export function SessionPage(props: {
  ctx: PageContext;
  session: SessionRow;
  timeline: TimelinePage;
  query: Query;
  /** Its open ambiguous ops, and what its agent can take (asked when the page was rendered). */
  ops: OpRow[];
  can: { actions: ActionAvailability; resolve: ResolveAvailability };
}) {
  const s = props.session;
  return (
    <Layout ctx={props.ctx} title={`Session ${s.sessionName}`} active={LISTS.sessions}>
      <dl class="facts">
        <dt>status</dt>
        <dd
          data-testid="session-status"
          data-live
          hx-get={detailHref("sessions", s.sessionName, s, "/status")}
          hx-trigger={`every ${props.ctx.pollSeconds}s, refresh, ${AFTER_ACTION_TRIGGER}`}
        >
          <Status value={s.status ?? "unknown"} />
        </dd>
        <dt>agent</dt>
        <dd>
          <a href={agentHref(s)}>
            {s.agentClass} · {s.agentName}
          </a>
        </dd>
        <dt>recoveries</dt>
        <dd>{s.recoveryCount}</dd>
        <dt>last turn</dt>
        <dd>{s.lastTurnSeq ?? "—"}</dd>
        <dt>last event</dt>
        <dd>
          {s.lastEventType} at <Time t={s.lastEventAt} ms />
        </dd>
      </dl>
      <AdminActions agentClass={s.agentClass} agentName={s.agentName} role={props.ctx.user.role} availability={props.can.actions} />
      {props.ops.length ? (
        <section data-testid="session-ops">
          <h2>Ambiguous ops</h2>
          <OpsTable
            rows={props.ops}
            now={props.ctx.now}
            role={props.ctx.user.role}
            testId="ops"
            uidPrefix="session-op"
            availability={props.can.resolve}
            showOwner={false}
          />
        </section>
      ) : null}
      <h2>Timeline (newest first)</h2>
      <PagedTimeline page={props.timeline} path={detailHref("sessions", s.sessionName)} query={props.query} dir="older" traceUrl={props.ctx.traceUrl} />
    </Layout>
  );
}

export function SessionStatusFragment(props: { status: string | null }) {
  return <Status value={props.status ?? "unknown"} />;
}
