import { ADMIN_ACTIONS } from "../../src/admin-rpc/actions";
import { type BatchProgress, BULK_ACTIONS, BULK_STATUSES, BULK_TARGET_CAP, type BulkTargets, type StuckConfig } from "../../src/store/read-models";
import { STUCK_RULES } from "../../src/store/read-models/stuck";
import { ExportLinks } from "../components/export-links";
import { SelectFilter, TextFilter } from "../components/filters";
import { Status } from "../components/status";
import { count, iso } from "../format";
import { Layout, type PageContext } from "../layout";
import { agentHref, batchHref, LISTS, listHref } from "../links";
import { bulkTargetWhy } from "../stuck-words";

type Query = Record<string, string | undefined>;

/**
 * Bulk actions: a filter (GET, so every selection has an address other pages link to), the preview of
 * the agents it selects, and for operators the action, a required reason and the confirmation.
 */
export function BulkPage(props: { ctx: PageContext; query: Query; selection: BulkTargets | null; stuckConfig: StuckConfig }) {
  const q = props.query;
  const s = props.selection;
  return (
    <Layout ctx={props.ctx} title="Bulk actions" active={LISTS.bulk}>
      <form class="filters" method="get" action={LISTS.bulk} data-testid="bulk-filter">
        <TextFilter name="agentClass" label="agent class" value={q.agentClass} placeholder="SessionAgent" />
        <TextFilter name="incidentReason" label="incident reason" value={q.incidentReason} placeholder="max_attempts_exceeded" />
        <label>
          <input type="checkbox" name="openOnly" value="true" checked={q.openOnly === "true" || q.openOnly === "1"} /> open incidents only
        </label>
        <SelectFilter name="status" label="status" value={q.status} options={BULK_STATUSES} />
        <SelectFilter name="stuckRule" label="stuck rule" value={q.stuckRule} options={STUCK_RULES} />
        <button type="submit">Preview</button>
        <a href={listHref("bulk")}>Clear</a>
      </form>
      <p class="muted">
        Status: running_runs = runs with no outcome yet; open_incidents = recovery incidents still open; running_sessions = sessions last reported running or
        rescheduled. All filters given must match. At most {BULK_TARGET_CAP} agents per batch.
      </p>
      {s ? (
        <>
          <ExportLinks list="bulk" query={q} />
          <Preview ctx={props.ctx} selection={s} stuckConfig={props.stuckConfig} />
        </>
      ) : (
        <p class="muted">Choose at least one filter to preview the agents it selects. Nothing changes until an operator confirms.</p>
      )}
    </Layout>
  );
}

function Preview(props: { ctx: PageContext; selection: BulkTargets; stuckConfig: StuckConfig }) {
  const s = props.selection;
  const n = s.targets.length;
  return (
    <section data-testid="bulk-preview">
      <h2>
        Preview: <span data-testid="bulk-count">{n}</span> agent{n === 1 ? "" : "s"}
      </h2>
      {s.capped ? (
        <p class="warn" data-testid="bulk-capped">
          {s.total} agents match; a batch takes the first {n} (by class and name). Narrow the filter, or run another batch afterwards.
        </p>
      ) : null}
      {n === 0 ? (
        <p class="muted" data-testid="bulk-empty">
          No agent matches this filter, so there is nothing to act on.
        </p>
      ) : (
        <>
          <table data-testid="bulk-targets">
            <thead>
              <tr>
                <th>agent class</th>
                <th>agent name</th>
                <th>why it matched</th>
              </tr>
            </thead>
            <tbody>
              {s.targets.map((t) => (
                <tr data-agent={`${t.agentClass}/${t.agentName}`} data-stuck-rule={t.stuck?.rule}>
                  <td>{t.agentClass}</td>
                  <td>
                    <a href={agentHref(t)}>{t.agentName}</a>
                  </td>
                  <td>{bulkTargetWhy(t, props.ctx.now, props.stuckConfig)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <ConfirmForm ctx={props.ctx} selection={s} />
        </>
      )}
    </section>
  );
}

/** Operators choose the action, give a reason and confirm; the form carries the filter, and the server selects again. */
function ConfirmForm(props: { ctx: PageContext; selection: BulkTargets }) {
  if (props.ctx.user.role !== "operator") {
    return (
      <p class="muted" data-testid="bulk-viewer">
        Bulk actions need the operator role; you are signed in as a viewer.
      </p>
    );
  }
  const f = props.selection.filter;
  const n = props.selection.targets.length;
  return (
    <form method="post" action={LISTS.bulk} class="actions" data-testid="bulk-confirm">
      <input type="hidden" name="_csrf" value={props.ctx.csrfToken} />
      {f.agentClass ? <input type="hidden" name="agentClass" value={f.agentClass} /> : null}
      {f.incidentReason ? <input type="hidden" name="incidentReason" value={f.incidentReason} /> : null}
      {f.openOnly ? <input type="hidden" name="openOnly" value="true" /> : null}
      {f.status ? <input type="hidden" name="status" value={f.status} /> : null}
      {f.stuckRule ? <input type="hidden" name="stuckRule" value={f.stuckRule} /> : null}
      <input type="hidden" name="expected" value={String(n)} />
      <fieldset>
        <legend>Action</legend>
        {BULK_ACTIONS.map((a, i) => (
          <label>
            <input type="radio" name="action" value={a} checked={i === 0} required /> {ADMIN_ACTIONS[a].label}
          </label>
        ))}
      </fieldset>
      <label>
        Reason (goes to the audit log, for the batch and every agent)
        <textarea name="reason" required minlength={1} maxlength={2000} placeholder="e.g. recovery loop after the model outage; stop them all" />
      </label>
      <button class="danger" type="submit">{`Confirm on ${count(n)} agent${n === 1 ? "" : "s"}`}</button>
    </form>
  );
}

/** A batch's page: who started it, why, on what, and its live progress. */
export function BatchPage(props: { ctx: PageContext; progress: BatchProgress }) {
  const p = props.progress;
  const label = (ADMIN_ACTIONS as Record<string, { label: string }>)[p.action]?.label ?? p.action;
  const filter = new URLSearchParams(p.filter).toString();
  return (
    <Layout ctx={props.ctx} title={`Bulk ${label.toLowerCase()}`} active={LISTS.bulk}>
      <dl class="facts" data-testid="batch-facts" data-batch={p.batchId} data-action={p.action}>
        <dt>batch</dt>
        <dd class="mono">{p.batchId}</dd>
        <dt>started</dt>
        <dd>
          {iso(p.time)} by {p.actor}
        </dd>
        <dt>reason</dt>
        <dd>{p.reason}</dd>
        <dt>filter</dt>
        <dd>{filter ? <a href={`${listHref("bulk")}?${filter}`}>{filter}</a> : "—"}</dd>
        <dt>audit</dt>
        <dd>
          <a href={listHref("audit", { batchId: p.batchId })}>this batch's rows in the audit log</a>
        </dd>
      </dl>
      <BatchProgressView progress={p} />
    </Layout>
  );
}

/**
 * The live part of a batch: a bar, the counts and a row per target reached. Polls every 2 s (paused while
 * the tab is hidden) until every target has finished, then stops.
 */
export function BatchProgressView(props: { progress: BatchProgress }) {
  const p = props.progress;
  const finished = p.done + p.failed;
  const live = p.complete ? {} : { "hx-get": batchHref(p.batchId, "/progress"), "hx-trigger": "every 2s, refresh", "hx-swap": "outerHTML", "data-live": "" };
  return (
    <section id="batch-progress" data-testid="batch-progress" data-complete={p.complete ? "true" : "false"} aria-live="polite" {...live}>
      <h2>{p.complete ? "Finished" : "In progress"}</h2>
      {p.result === "denied" || p.result === "invalid" ? (
        <p class="error-message">This batch was refused and never started: {p.error}</p>
      ) : (
        <>
          <progress
            data-testid="batch-bar"
            max={Math.max(p.total, 1)}
            value={finished}
            aria-label="targets finished"
          >{`${count(finished)} of ${count(p.total)}`}</progress>
          <p data-testid="batch-counts">
            <span data-testid="batch-done">{p.done}</span> done · <span data-testid="batch-failed">{p.failed}</span> failed · {p.running} running · {p.queued}{" "}
            queued · of <span data-testid="batch-total">{p.total}</span>
          </p>
        </>
      )}
      {p.targets.length ? (
        <table data-testid="batch-targets">
          <thead>
            <tr>
              <th>agent class</th>
              <th>agent name</th>
              <th>result</th>
              <th>message</th>
            </tr>
          </thead>
          <tbody>
            {p.targets.map((t) => (
              <tr data-result={t.result} data-agent={`${t.agentClass}/${t.agentName}`}>
                <td>{t.agentClass}</td>
                <td>
                  <a href={agentHref(t)}>{t.agentName}</a>
                </td>
                <td>
                  <Status value={t.result} />
                </td>
                <td>{t.error ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
