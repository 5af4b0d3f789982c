import { ALERT_KINDS, ALERT_STATUSES, type AlertDeliveryRow } from "../../src/store/read-models/alerts";
import type { Page } from "../../src/store/read-models/paging";
import { ExportLinks } from "../components/export-links";
import { FilterForm, SelectFilter } from "../components/filters";
import { Pager } from "../components/pager";
import { Status } from "../components/status";
import { ago, iso } from "../format";
import { Layout, type PageContext } from "../layout";
import { agentHref, detailHref, LISTS, listHref } from "../links";

type Query = Record<string, string | undefined>;

/** Whether alerts go out, and where (hosts only: webhook URLs are secrets). */
export type AlertSettingsView =
  | { enabled: true; channels: { channel: string; host: string }[]; limitPerHour: number; consoleUrl: string | null }
  | { enabled: false; reason: string };

/** Delivery statuses as badges: the tone comes from the status badge's fixed set, the text is ours. */
const TONE: Record<string, string> = { sent: "ok", queued: "pending", failed: "failed", rate_limited: "skipped" };
const KIND_LABEL: Record<string, string> = {
  exhausted: "recovery exhausted",
  ambiguous_op: "ambiguous op",
  stuck: "stuck",
  deploy_storm: "recovery storm after deploy",
};

/** Where an alert's subject lives in the console. */
function subjectLink(a: AlertDeliveryRow) {
  if (a.kind === "exhausted") return <a href={detailHref("incidents", a.subjectId, a)}>incident {a.subjectId}</a>;
  if (a.kind === "stuck") return <a href={listHref("stuck", { rule: a.subjectId })}>rule {a.subjectId}</a>;
  if (a.kind === "deploy_storm") return <a href={listHref("incidents", { version: a.subjectId })}>version {a.subjectId}</a>;
  return <a href={listHref("ops", { open: "true" })}>op {a.subjectId}</a>;
}

/** The alert delivery log: every alert per channel, with its delivery outcome, newest first. */
export function AlertsPage(props: { ctx: PageContext; query: Query; page: Page<AlertDeliveryRow>; settings: AlertSettingsView }) {
  const q = props.query;
  const s = props.settings;
  return (
    <Layout ctx={props.ctx} title="Alerts" active={LISTS.alerts}>
      <section data-testid="alert-settings" data-enabled={String(s.enabled)} data-channels={s.enabled ? s.channels.map((c) => c.channel).join(" ") : ""}>
        {s.enabled ? (
          <p>
            Alerts are on: {s.channels.map((c) => `${c.channel === "slack" ? "Slack" : "JSON webhook"} (${c.host})`).join(", ")}; at most {s.limitPerHour} per
            channel per hour.
            {s.consoleUrl ? ` Links point to ${s.consoleUrl}.` : " Set ALERT_CONSOLE_URL for links to this console in alerts."}
          </p>
        ) : (
          <p class="warn">
            Alerts are off ({s.reason.replace(/^alerts are off: /, "")}). Set ALERT_WEBHOOK_URL or ALERT_SLACK_WEBHOOK_URL (see the README) to be notified of
            exhaustions, new ambiguous ops and stuck agents.
          </p>
        )}
      </section>
      <FilterForm action={LISTS.alerts}>
        <SelectFilter name="status" label="status" value={q.status} options={ALERT_STATUSES} />
        <SelectFilter name="kind" label="kind" value={q.kind} options={ALERT_KINDS} />
      </FilterForm>
      <ExportLinks list="alerts" query={props.query} />
      <table data-testid="alerts">
        <thead>
          <tr>
            <th>when</th>
            <th>kind</th>
            <th>agent</th>
            <th>subject</th>
            <th>summary</th>
            <th>channel</th>
            <th>status</th>
            <th class="num">attempts</th>
            <th class="num">HTTP</th>
            <th>last error</th>
          </tr>
        </thead>
        <tbody>
          {props.page.items.map((a) => (
            <tr data-agent={`${a.agentClass}/${a.agentName}`} data-channel={a.channel} data-status={a.status} data-http-status={a.httpStatus ?? undefined}>
              <td title={iso(a.createdAt)}>{ago(a.createdAt, props.ctx.now)}</td>
              <td>{KIND_LABEL[a.kind] ?? a.kind}</td>
              <td>
                <a href={agentHref(a)}>
                  {a.agentClass} · {a.agentName}
                </a>
              </td>
              <td>{subjectLink(a)}</td>
              <td>{a.summary}</td>
              <td>{a.channel}</td>
              <td>
                <Status value={TONE[a.status] ?? a.status} label={a.status.replace("_", " ")} />
              </td>
              <td class="num">{a.attempts}</td>
              <td class="num">{a.httpStatus ?? "—"}</td>
              <td>{a.lastError ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.page.items.length === 0 ? <p class="muted">No alerts match.</p> : null}
      <Pager path={LISTS.alerts} query={q} next={props.page.next} hasCursor={Boolean(q.cursor)} />
    </Layout>
  );
}
