import { type AgentRow, type EventGap, eventGapOf, GAP_COUNT_WINDOW, type Page } from "../../src/store/read-models";
import { ColumnChooser, ColumnTable, columnSet } from "../components/columns";
import { ExportLinks } from "../components/export-links";
import { FilterForm, SelectFilter, TextFilter } from "../components/filters";
import { Pager } from "../components/pager";
import { Ago } from "../components/time";
import { Layout, type PageContext } from "../layout";
import { agentHref, LISTS } from "../links";

type Query = Record<string, string | undefined>;

/** "1 event" / "3 events". */
const events = (n: number) => `${n} ${n === 1 ? "event" : "events"}`;

/** The agents list's columns: the agent (its link), then those `cols=` picks. */
export const AGENT_COLUMN_SET = columnSet<AgentRow, { now: number }>(
  "agents",
  { id: "agent", header: "agent", fields: ["agentName", "agentClass"], cell: (a) => <a href={agentHref(a)}>{a.agentName}</a> },
  [
    { id: "class", header: "class", fields: ["agentClass"], cell: (a) => a.agentClass },
    { id: "lastSeen", header: "last seen", fields: ["lastSeen"], cell: (a, x) => <Ago t={a.lastSeen} now={x.now} /> },
    {
      id: "missing",
      header: "missing events",
      num: true,
      fields: ["seqMax", "seqSeen"],
      cell: (a) => {
        const gap = eventGapOf(a);
        return gap.highest === null ? "—" : gap.missing;
      },
    },
    {
      id: "arrived",
      header: "numbered events arrived",
      num: true,
      fields: ["seqMax", "seqSeen"],
      cell: (a) => {
        const gap = eventGapOf(a);
        return gap.highest === null ? "unnumbered" : `${gap.arrived} of ${gap.highest}`;
      },
    },
  ],
);

/**
 * The agent registry, or (gaps=true) exactly the agents with events that never arrived: the list the
 * overview's "Agents with missing events" card counts. One row per agent.
 */
export function AgentsPage(props: { ctx: PageContext; query: Query; page: Page<AgentRow>; gapsOnly: boolean; cols?: readonly string[] }) {
  const q = props.query;
  const title = props.gapsOnly ? "Agents with missing events" : "Agents";
  return (
    <Layout ctx={props.ctx} title={title} active="">
      {props.gapsOnly ? (
        <p class="muted" data-testid="gaps-explained">
          Each agent numbers the events it sends. These agents sent numbered events that the console never stored: lost on the way (a local Queue killed with
          messages in it) or refused at ingest (see dead letters). A page looks at up to {GAP_COUNT_WINDOW.toLocaleString("en-US")} agents, most recently seen
          first; a short page with a next page continues the search.
        </p>
      ) : null}
      <FilterForm action={LISTS.agents}>
        <TextFilter name="agentClass" label="class" value={q.agentClass} />
        <SelectFilter name="gaps" label="missing events" value={q.gaps} options={["true"]} />
        <ColumnChooser set={AGENT_COLUMN_SET} cols={props.cols ?? []} />
      </FilterForm>
      <ExportLinks list="agents" query={q} />
      <ColumnTable
        set={AGENT_COLUMN_SET}
        rows={props.page.items}
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
      {props.page.items.length === 0 ? (
        <p class="muted">
          {props.page.next ? "None on this page; the next page continues." : props.gapsOnly ? "Every numbered event arrived." : "No agent has reported."}
        </p>
      ) : null}
      <Pager path={LISTS.agents} query={q} next={props.page.next} hasCursor={Boolean(q.cursor)} />
    </Layout>
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
        This agent sends unnumbered events (an older telemetry package, or events shipped without its outbox): the console cannot tell whether any went missing.
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
