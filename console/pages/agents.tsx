import {
  type AgentRow,
  agentListFilters,
  BLOCKED_COUNT_WINDOW,
  type BlockedAgentRow,
  type EventGap,
  eventGapOf,
  GAP_COUNT_WINDOW,
  HEARD_FROM_STEP_MS,
  type Page,
  TELEMETRY_QUIET_MS,
} from "../../src/store/read-models";
import { type Column, ColumnChooser, ColumnTable, columnSet } from "../components/columns";
import { ExportLinks } from "../components/export-links";
import { FilterForm, SelectFilter, TextFilter } from "../components/filters";
import { Pager } from "../components/pager";
import { Ago } from "../components/time";
import { count } from "../format";
import { Layout, type PageContext } from "../layout";
import { agentHref, LISTS } from "../links";

type Query = Record<string, string | undefined>;

/** "1 event" / "3 events". */
const events = (n: number) => `${count(n)} ${n === 1 ? "event" : "events"}`;

/** Every agents list's first column: the agent, as the link to its page (a blocked agent's row is an agent's row too). */
const AGENT_KEY_COLUMN: Column<AgentRow, { now: number }> = {
  id: "agent",
  header: "agent",
  fields: ["agentName", "agentClass"],
  cell: (a) => <a href={agentHref(a)}>{a.agentName}</a>,
};

/** The agents list's columns: the agent (its link), then those `cols=` picks. */
export const AGENT_COLUMN_SET = columnSet<AgentRow, { now: number }>("agents", AGENT_KEY_COLUMN, [
  { id: "class", header: "class", fields: ["agentClass"], cell: (a) => a.agentClass },
  { id: "lastSeen", header: "last heard from", fields: ["lastSeen"], cell: (a, x) => <Ago t={a.lastSeen} now={x.now} /> },
  {
    id: "missing",
    header: "missing events",
    num: true,
    fields: ["seqMax", "seqSeen"],
    cell: (a) => {
      const gap = eventGapOf(a);
      return gap.highest === null ? "—" : count(gap.missing);
    },
  },
  {
    id: "arrived",
    header: "numbered events arrived",
    num: true,
    fields: ["seqMax", "seqSeen"],
    cell: (a) => {
      const gap = eventGapOf(a);
      return gap.highest === null ? "unnumbered" : `${count(gap.arrived)} of ${count(gap.highest)}`;
    },
  },
]);

/** What a blocked agent said of its pipeline (src/admin-rpc/pipeline-state.ts), in a few words. */
const PIPELINE_WORDS: Record<BlockedAgentRow["pipeline"], string> = {
  no_queue: "no telemetry Queue binding",
  failing: "sends failing",
};

/**
 * The columns of the agents whose events cannot reach the console (blocked=true): what each said and when it was
 * asked, in place of the event counts. A list of its own rows (the agent joined with its last answer), so its own
 * declaration, under the same list name: its page, its cards and its download share it.
 */
export const BLOCKED_AGENT_COLUMN_SET = columnSet<BlockedAgentRow, { now: number }>("agents", AGENT_KEY_COLUMN, [
  { id: "class", header: "class", fields: ["agentClass"], cell: (a) => a.agentClass },
  { id: "pipeline", header: "what it said", fields: ["pipeline"], cell: (a) => PIPELINE_WORDS[a.pipeline] },
  { id: "asked", header: "asked", fields: ["askedAt"], cell: (a, x) => <Ago t={a.askedAt} now={x.now} /> },
  { id: "lastSeen", header: "last heard from", fields: ["lastSeen"], cell: (a, x) => <Ago t={a.lastSeen} now={x.now} /> },
]);

/** The agents list's column declaration for its filters (as given): blocked=true lists other rows (BLOCKED_AGENT_COLUMN_SET). */
export const agentColumnSetFor = (filters: Record<string, unknown>) =>
  agentListFilters.shape.blocked.safeParse(filters.blocked).data === true ? BLOCKED_AGENT_COLUMN_SET : AGENT_COLUMN_SET;

/**
 * The agent registry, or exactly the agents with events that never arrived (gaps=true), or exactly the agents whose
 * events cannot reach the console (blocked=true): the lists the overview's two agent cards count. One row per agent.
 */
export function AgentsPage(props: {
  ctx: PageContext;
  query: Query;
  page: Page<AgentRow> | Page<BlockedAgentRow>;
  only: "gaps" | "blocked" | null;
  cols?: readonly string[];
}) {
  const q = props.query;
  const title = props.only === "gaps" ? "Agents with missing events" : props.only === "blocked" ? "Agents whose events cannot reach the console" : "Agents";
  const empty = props.page.next
    ? "None on this page; the next page continues."
    : props.only === "gaps"
      ? "Every numbered event arrived."
      : props.only === "blocked"
        ? "No agent reconciliation asked says its events cannot reach the console (or events arrived from it since it said so). Agents it has not asked are not known here."
        : "No agent has reported.";
  return (
    <Layout ctx={props.ctx} title={title} active={LISTS.agents}>
      {props.only === "gaps" ? (
        <p class="muted" data-testid="gaps-explained">
          Each agent numbers the events it sends. These agents sent numbered events that the console never stored: lost on the way (a local Queue killed with
          messages in it) or refused at ingest (see dead letters). A page looks at up to {count(GAP_COUNT_WINDOW)} agents, most recently seen first; a short
          page with a next page continues the search.
        </p>
      ) : null}
      {props.only === "blocked" ? (
        <p class="muted" data-testid="blocked-explained">
          When reconciliation asked these agents, they said their Worker has no telemetry Queue binding, or that their sends have been failing while the console
          heard nothing from them for {TELEMETRY_QUIET_MS / 60_000} minutes; no event of theirs has arrived since. Their events wait in their own storage, so
          everywhere else they look quiet, not broken. Only agents reconciliation asked are here: those with stale work or missing events, and one agent of each
          class gone quiet. A page looks at up to {count(BLOCKED_COUNT_WINDOW)} of them, most recently asked first.
        </p>
      ) : null}
      <FilterForm action={LISTS.agents}>
        <TextFilter name="agentClass" label="class" value={q.agentClass} />
        <SelectFilter name="gaps" label="missing events" value={q.gaps} options={["true"]} />
        <SelectFilter name="blocked" label="events blocked" value={q.blocked} options={["true"]} />
        <ColumnChooser set={props.only === "blocked" ? BLOCKED_AGENT_COLUMN_SET : AGENT_COLUMN_SET} cols={props.cols ?? []} />
      </FilterForm>
      <ExportLinks list="agents" query={q} />
      {props.only === "blocked" ? (
        <ColumnTable
          set={BLOCKED_AGENT_COLUMN_SET}
          rows={props.page.items as BlockedAgentRow[]}
          x={{ now: props.ctx.now }}
          testId="agents"
          cols={props.cols}
          rowAttrs={(a) => ({ "data-testid": "agent-row", "data-agent-class": a.agentClass, "data-agent-name": a.agentName, "data-pipeline": a.pipeline })}
        />
      ) : (
        <ColumnTable
          set={AGENT_COLUMN_SET}
          rows={props.page.items as AgentRow[]}
          x={{ now: props.ctx.now }}
          testId="agents"
          cols={props.cols}
          rowAttrs={(a) => ({
            "data-testid": "agent-row",
            "data-agent-class": a.agentClass,
            "data-agent-name": a.agentName,
            "data-missing": String(eventGapOf(a).missing),
          })}
        />
      )}
      {props.page.items.length === 0 ? <p class="muted">{empty}</p> : <HeardFromNote />}
      <Pager path={LISTS.agents} query={q} next={props.page.next} hasCursor={Boolean(q.cursor)} />
    </Layout>
  );
}

/**
 * What "last heard from" means: the console records it at most once per step per agent (src/store/heard-from.ts), so
 * the figure and the list's order are as of that step, and the page says so rather than pass it off as exact.
 */
export function HeardFromNote() {
  const minutes = HEARD_FROM_STEP_MS / 60_000;
  return (
    <p class="muted" data-testid="heard-from-note">
      "Last heard from" is the time of an event the console received from the agent, recorded at most once every {minutes} minutes per agent: the agent may have
      sent more in the {minutes} minutes after it, and agents are listed by it, newest first. Events since reconciliation found an agent's events blocked are
      recorded at once.
    </p>
  );
}

/**
 * On an agent's page: how many of its events never arrived, what that means for what the page shows, and what
 * the console did about it. `asked`: this page's request asked the agent for its live state (and so
 * reconciliation compares it with the console's runs), else why it could not.
 */
export function EventGapNotice(props: { gap: EventGap; asked: { ok: true } | { ok: false; reason: string } }) {
  const { gap } = props;
  if (gap.highest === null) {
    return (
      <p class="muted" data-testid="event-gap-unknown">
        This agent's events carry no numbers (captured from its Worker's tail, or sent by an older telemetry package): the console cannot count events lost in
        transport. What the runtime reports as cut short, and what the Queue refused, is kept in <a href={LISTS.deadLetters}>dead letters</a> (the whole
        fleet's); a run whose end never arrives is shown as unknown after a stated age.
      </p>
    );
  }
  if (gap.restarted) {
    return (
      <p class="muted" data-testid="event-gap-restarted">
        This agent's event numbers restarted: {gap.arrived} numbered events arrived, more than its highest number, {gap.highest}. Its storage was probably wiped
        (destroyed and created again under the same name). Events missing since then cannot be counted.
      </p>
    );
  }
  if (gap.missing === 0) {
    return (
      <p class="muted" data-testid="event-gap-none" data-missing="0">
        All {events(gap.arrived)} this agent numbered arrived.
      </p>
    );
  }
  return (
    <section class="notice" data-testid="event-gap" data-missing={String(gap.missing)} data-highest={String(gap.highest)} data-arrived={String(gap.arrived)}>
      <p>
        <strong>{events(gap.missing)} from this agent never arrived.</strong> It numbered its events up to {gap.highest}; {gap.arrived} of them reached the
        console. The others were lost on the way (for example a local Queue killed with messages in it) or refused at ingest (see dead letters). What they
        reported (a run that ended, a recovery that finished, a status) is missing here, so a run, an incident or a session of this agent may show an older
        state than the agent's own.
      </p>
      <p data-testid="event-gap-action" data-asked={String(props.asked.ok)}>
        {props.asked.ok
          ? "What the console did: this page asked the agent what it holds now, and reconciliation compares that with the console's runs and closes what the agent still records (the line below says what it recorded). Work the agent no longer holds cannot be filled in."
          : `What the console did: nothing yet. It could not ask the agent now (${props.asked.reason}), so nothing was filled in from it; reconciliation asks again later.`}{" "}
        The count stays: it counts events, not work, and goes down only if a missing event arrives late.
      </p>
    </section>
  );
}
