import { STUCK_CONFIG_VARS, STUCK_RULES, type StuckConfig, type StuckEntry, type StuckRule } from "../../src/store/read-models";
import { ColumnChooser, ColumnTable, columnSet } from "../components/columns";
import { ExportLinks } from "../components/export-links";
import { FilterForm, SelectFilter, TextFilter } from "../components/filters";
import { iso } from "../format";
import { Layout, type PageContext } from "../layout";
import { agentHref, href, LISTS, listHref, stuckSubjectHref } from "../links";
import { stuckDetail, stuckFor } from "../stuck-words";

/** Each rule in a few words, for the list and the thresholds table. */
export const STUCK_RULE_LABEL: Record<StuckRule, string> = {
  no_progress: "running, no progress",
  incident_no_attempt: "incident open, no attempt",
  alarm_overdue: "alarm overdue",
  skipped_no_reason: "skipped without a reason",
};

/** What each rule's minutes mean. */
const THRESHOLD_MEANING: Record<StuckRule, string> = {
  no_progress: "a run with no progress event for longer than this",
  incident_no_attempt: "an open recovery incident with no attempt for longer than this",
  alarm_overdue: "an alarm more than this past due when the agent was last asked",
  skipped_no_reason: "skips without a reason within this look-back",
};

/** The agent's page, scrolled to its actions (force idle, trigger alarm). */
export const agentActionsHref = (e: Pick<StuckEntry, "agentClass" | "agentName">) => agentHref(e, "", "admin-actions");

/** The stuck list's columns: the finding's subject (its link), then those `cols=` picks. */
export const STUCK_COLUMN_SET = columnSet<StuckEntry, { now: number; config: StuckConfig }>(
  "stuck",
  {
    id: "subject",
    header: "subject",
    fields: ["subjectKind", "subjectId", "agentClass", "agentName"],
    cell: (e) => (
      <a href={stuckSubjectHref(e)} class="mono">
        {e.subjectKind} {e.subjectId}
      </a>
    ),
  },
  [
    {
      id: "rule",
      header: "rule",
      fields: ["rule"],
      cell: (e) => (
        <>
          <span class="badge warn">{STUCK_RULE_LABEL[e.rule]}</span>
          <div class="muted mono">{e.rule}</div>
        </>
      ),
    },
    {
      id: "agent",
      header: "agent",
      fields: ["agentClass", "agentName"],
      cell: (e) => (
        <>
          {e.agentClass} · {e.agentName}
        </>
      ),
    },
    {
      id: "since",
      header: "since",
      fields: ["since"],
      cell: (e, x) => (
        <>
          {iso(e.since)}
          <div class="muted" data-testid="stuck-for">
            for {stuckFor(x.now - e.since)}
          </div>
        </>
      ),
    },
    {
      id: "why",
      header: "why",
      fields: ["runKind", "runName", "lastSeen", "confirmedAt", "wakeAt", "incidentKind", "attempts", "askedAt", "nextAlarmAt", "skipped"],
      attrs: () => ({ "data-testid": "stuck-detail" }),
      cell: (e, x) => stuckDetail(e, x.now, x.config),
    },
    {
      id: "act",
      header: "act",
      fields: ["agentClass", "agentName"],
      cell: (e) => (
        <a href={agentActionsHref(e)} data-testid="stuck-act">
          Agent actions
        </a>
      ),
    },
  ],
);

/** What the stuck page and its refreshing list are drawn from. */
type StuckProps = {
  ctx: PageContext;
  query: { rule?: string; agentClass?: string; cols?: string };
  entries: StuckEntry[];
  config: StuckConfig;
  limit: number;
  cols?: readonly string[];
};

/**
 * Stuck work: one row per finding, newest-stuck first. Each says which rule fired, since when and for how
 * long, why (one sentence), and links to its subject and to its agent's actions, one click away.
 */
export function StuckPage(props: StuckProps) {
  const { ctx, entries, config } = props;
  return (
    <Layout ctx={ctx} title="Stuck" active={LISTS.stuck}>
      <FilterForm action={LISTS.stuck}>
        <SelectFilter name="rule" label="rule" value={props.query.rule} options={STUCK_RULES} />
        <TextFilter name="agentClass" label="agent class" value={props.query.agentClass} />
        <ColumnChooser set={STUCK_COLUMN_SET} cols={props.cols ?? []} />
      </FilterForm>
      <ExportLinks list="stuck" query={props.query} />
      {props.query.rule && entries.length ? (
        <p>
          <a data-testid="stuck-bulk-link" href={listHref("bulk", { stuckRule: props.query.rule, agentClass: props.query.agentClass })}>
            {`Act on every agent stuck by ${props.query.rule} (bulk force idle or trigger alarm, with a preview first)`}
          </a>
        </p>
      ) : null}
      {/* The list refreshes by itself (paused while the tab is hidden): stuck work appears and clears without a reload. */}
      <div id="stuck-live" data-live hx-get={href("/partials/stuck", props.query)} hx-trigger={`every ${ctx.pollSeconds}s, refresh`} hx-swap="innerHTML">
        <StuckList ctx={ctx} query={props.query} entries={entries} config={config} limit={props.limit} cols={props.cols} />
      </div>
      <h2>Thresholds</h2>
      <table data-testid="stuck-thresholds">
        <thead>
          <tr>
            <th>rule</th>
            <th>minutes</th>
            <th>meaning</th>
            <th>set by</th>
          </tr>
        </thead>
        <tbody>
          {STUCK_RULES.map((r) => (
            <tr>
              <td>
                {STUCK_RULE_LABEL[r]} <span class="muted mono">({r})</span>
              </td>
              <td class="num" data-testid={`threshold-${r}`}>
                {String(config[r])}
              </td>
              <td>{THRESHOLD_MEANING[r]}</td>
              <td class="mono">{STUCK_CONFIG_VARS[r]}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="muted">Alarm overdue uses what the agent answered when the console last asked it (cron reconciliation, or opening its page).</p>
    </Layout>
  );
}

/** The refreshing list of findings (an htmx fragment). */
export function StuckList(props: StuckProps) {
  const { ctx, entries, config } = props;
  return (
    <>
      {entries.length ? (
        <ColumnTable
          set={STUCK_COLUMN_SET}
          rows={entries}
          x={{ now: ctx.now, config }}
          testId="stuck"
          cols={props.cols}
          mainList
          rowAttrs={(e) => ({
            "data-rule": e.rule,
            "data-subject": e.subjectId,
            "data-agent": `${e.agentClass}/${e.agentName}`,
            "data-since": String(e.since),
          })}
        />
      ) : (
        <p class="muted" data-testid="stuck-none">
          Nothing stuck{props.query.rule ? ` under ${props.query.rule}` : ""}
          {props.query.agentClass ? ` in ${props.query.agentClass}` : ""}.
        </p>
      )}
      {entries.length >= props.limit ? <p class="muted">Showing the {props.limit} newest; filter by rule or agent class to see others.</p> : null}
    </>
  );
}
