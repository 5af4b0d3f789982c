import type { AlertBudgets } from "../../src/store/alerts";
import { ALERT_KINDS, ALERT_PRIORITY, ALERT_STATUSES, type AlertDeliveryRow, type SuppressedAlerts } from "../../src/store/read-models/alerts";
import type { Page } from "../../src/store/read-models/paging";
import { ColumnChooser, ColumnTable, columnSet } from "../components/columns";
import { ExportLinks } from "../components/export-links";
import { FilterForm, SelectFilter } from "../components/filters";
import { ListPager } from "../components/pager";
import { Status } from "../components/status";
import { ALERT_KIND_LABEL, SuppressedAlertsNote } from "../components/suppressed-alerts";
import { ago, count, iso } from "../format";
import { Layout, type PageContext } from "../layout";
import { agentHref, detailHref, LISTS, listHref } from "../links";

type Query = Record<string, string | undefined>;

/** Whether alerts go out, and where (hosts only: webhook URLs are secrets). */
export type AlertSettingsView =
  | { enabled: true; channels: { channel: string; host: string }[]; budgets: AlertBudgets; consoleUrl: string | null }
  | { enabled: false; reason: string };

/** Delivery statuses as badges: the tone comes from the status badge's fixed set, the text is ours. */
const TONE: Record<string, string> = { sent: "ok", queued: "pending", failed: "failed", rate_limited: "skipped" };
const KIND_LABEL = ALERT_KIND_LABEL;
/** The high-priority kinds, named: the ones with a budget of their own. */
const HIGH_KINDS = ALERT_KINDS.filter((k) => ALERT_PRIORITY[k] === "high")
  .map((k) => `"${KIND_LABEL[k] ?? k}"`)
  .join(", ")
  .replace(/, ([^,]*)$/, " and $1");

/** Where an alert's subject lives in the console. */
function subjectLink(a: AlertDeliveryRow) {
  switch (a.kind) {
    case "exhausted":
    case "exhaust_soon":
      return <a href={detailHref("incidents", a.subjectId, a)}>incident {a.subjectId}</a>;
    case "stuck":
      return <a href={listHref("stuck", { rule: a.subjectId })}>rule {a.subjectId}</a>;
    case "deploy_storm":
      return <a href={listHref("incidents", { version: a.subjectId })}>version {a.subjectId}</a>;
    case "exhaustion_wave":
      return <a href={listHref("incidents", { agentClass: a.agentClass, status: "exhausted" })}>class {a.agentClass}</a>;
    // Re-spent tokens: one agent's (its page), or a whole class's (an empty agent name: the class's incidents).
    case "respent":
      return a.agentName ? (
        <a href={agentHref(a)}>agent {a.agentName}</a>
      ) : (
        <a href={listHref("incidents", { agentClass: a.agentClass })}>class {a.agentClass}</a>
      );
    case "alarm_loop":
      return <a href={agentHref(a)}>agent {a.agentName}</a>;
    case "ambiguous_op":
      return <a href={listHref("ops", { open: "true" })}>op {a.subjectId}</a>;
  }
}

/**
 * Cells that hold the customer's ids (agent names, incident ids, in links and sentences) or an error's text: they
 * break anywhere rather than widen the page (console.css td.breakable), so every column stays on screen at 1,280 px.
 */
const breakable = () => ({ class: "breakable" });

/** The alert log's columns: when (each delivery's place in the log), then those `cols=` picks. */
export const ALERT_COLUMN_SET = columnSet<AlertDeliveryRow, { now: number }>(
  "alerts",
  {
    id: "when",
    header: "when",
    fields: ["alertKey", "channel", "createdAt"],
    attrs: (a) => ({ title: iso(a.createdAt) }),
    cell: (a, x) => ago(a.createdAt, x.now),
  },
  [
    { id: "kind", header: "kind", fields: ["kind"], attrs: (a) => ({ "data-kind": a.kind }), cell: (a) => KIND_LABEL[a.kind] ?? a.kind },
    {
      id: "agent",
      header: "agent",
      fields: ["agentClass", "agentName"],
      attrs: breakable,
      cell: (a) => (
        <a href={agentHref(a)}>
          {a.agentClass} · {a.agentName}
        </a>
      ),
    },
    { id: "subject", header: "subject", fields: ["subjectId"], attrs: breakable, cell: (a) => subjectLink(a) },
    { id: "summary", header: "summary", fields: ["summary"], attrs: breakable, cell: (a) => a.summary },
    { id: "channel", header: "channel", fields: ["channel"], cell: (a) => a.channel },
    { id: "status", header: "status", fields: ["status"], cell: (a) => <Status value={TONE[a.status] ?? a.status} label={a.status.replace("_", " ")} /> },
    { id: "attempts", header: "attempts", num: true, fields: ["attempts"], cell: (a) => count(a.attempts) },
    { id: "http", header: "HTTP", num: true, fields: ["httpStatus"], cell: (a) => a.httpStatus ?? "—" },
    { id: "lastError", header: "last error", fields: ["lastError"], attrs: breakable, cell: (a) => a.lastError ?? "" },
  ],
);

/** The alert delivery log: every alert per channel, with its delivery outcome, newest first. */
export function AlertsPage(props: {
  ctx: PageContext;
  query: Query;
  page: Page<AlertDeliveryRow>;
  settings: AlertSettingsView;
  suppressed: SuppressedAlerts;
  cols?: readonly string[];
}) {
  const q = props.query;
  const s = props.settings;
  return (
    <Layout ctx={props.ctx} title="Alerts" active={LISTS.alerts}>
      <section data-testid="alert-settings" data-enabled={String(s.enabled)} data-channels={s.enabled ? s.channels.map((c) => c.channel).join(" ") : ""}>
        {s.enabled ? (
          <p>
            Alerts are on: {s.channels.map((c) => `${c.channel === "slack" ? "Slack" : "JSON webhook"} (${c.host})`).join(", ")}; per channel and hour, at most{" "}
            <span data-budget="high">{s.budgets.high}</span> alerts of high priority ({HIGH_KINDS}), a budget no other kind can spend, and{" "}
            <span data-budget="normal">{s.budgets.normal}</span> of every other kind.
            {s.consoleUrl ? ` Links point to ${s.consoleUrl}.` : " Set ALERT_CONSOLE_URL for links to this console in alerts."}
          </p>
        ) : (
          <p class="warn">
            Alerts are off ({s.reason.replace(/^alerts are off: /, "")}). Set ALERT_WEBHOOK_URL or ALERT_SLACK_WEBHOOK_URL (see the README) to be notified of
            exhaustions, new ambiguous ops and stuck agents.
          </p>
        )}
        <SuppressedAlertsNote s={props.suppressed} window="last 24 h" />
      </section>
      <FilterForm action={LISTS.alerts}>
        <SelectFilter name="status" label="status" value={q.status} options={ALERT_STATUSES} />
        <SelectFilter name="kind" label="kind" value={q.kind} options={ALERT_KINDS} />
        <ColumnChooser set={ALERT_COLUMN_SET} cols={props.cols ?? []} />
      </FilterForm>
      <ExportLinks list="alerts" query={props.query} />
      <ColumnTable
        set={ALERT_COLUMN_SET}
        rows={props.page.items}
        x={{ now: props.ctx.now }}
        testId="alerts"
        cols={props.cols}
        rowAttrs={(a) => ({
          "data-agent": `${a.agentClass}/${a.agentName}`,
          "data-channel": a.channel,
          "data-status": a.status,
          "data-http-status": a.httpStatus == null ? undefined : String(a.httpStatus),
        })}
      />
      <ListPager path={LISTS.alerts} query={q} page={props.page} noun="alerts" empty="No alerts match." />
    </Layout>
  );
}
