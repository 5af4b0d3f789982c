import { AUDIT_ACTIONS, AUDIT_RESULTS, type AuditRow, BATCH_TARGET_CLASS, type BackupRow, type OpRow, type Page } from "../../src/store/read-models";
import { auditNoticeWords } from "../admin-words";
import { ColumnChooser, ColumnTable, columnSet } from "../components/columns";
import { ExportLinks } from "../components/export-links";
import { FilterForm, SelectFilter, TextFilter } from "../components/filters";
import { HotSpan } from "../components/hot-span";
import { OP_COLUMN_SET, OpsTable } from "../components/ops-table";
import { ListPager } from "../components/pager";
import { Status } from "../components/status";
import { Ago, Time } from "../components/time";
import { TimePresets } from "../components/time-presets";
import { bytes } from "../format";
import { Layout, type PageContext } from "../layout";
import { agentHref, batchHref, detailHref, LISTS, listHref } from "../links";

type Query = Record<string, string | undefined>;

/** The backups list's columns: the session it belongs to (its link), then those `cols=` picks. */
export const BACKUP_COLUMN_SET = columnSet<BackupRow, { now: number }>(
  "backups",
  {
    id: "session",
    header: "session",
    fields: ["sessionName", "agentClass", "agentName"],
    cell: (b) => <a href={detailHref("sessions", b.sessionName, b)}>{b.sessionName}</a>,
  },
  [
    { id: "tenant", header: "tenant", fields: ["tenant"], cell: (b) => b.tenant },
    { id: "environment", header: "environment", fields: ["environment"], cell: (b) => b.environment },
    { id: "created", header: "created", fields: ["createdAt"], cell: (b, x) => <Ago t={b.createdAt} now={x.now} /> },
    {
      id: "expires",
      header: "expires",
      fields: ["expiresAt", "expired"],
      cell: (b) => (b.expired ? <Status value="expired" /> : <Time t={b.expiresAt} />),
    },
    { id: "size", header: "size", num: true, fields: ["bytes"], cell: (b) => bytes(b.bytes) },
    { id: "restored", header: "restored", fields: ["restoredAt"], cell: (b, x) => (b.restoredAt ? <Ago t={b.restoredAt} now={x.now} /> : "—") },
    { id: "handle", header: "handle", fields: ["handle"], attrs: () => ({ class: "mono" }), cell: (b) => b.handle },
  ],
);

/** Workspace backups per tenant, environment and session, with expiry (expired is derived from time). */
export function BackupsPage(props: { ctx: PageContext; query: Query; page: Page<BackupRow>; cols?: readonly string[] }) {
  const q = props.query;
  return (
    <Layout ctx={props.ctx} title="Workspace backups" active={LISTS.backups}>
      <HotSpan list="backups" hours={props.ctx.hotWindowHours} />
      <FilterForm action={LISTS.backups}>
        <TextFilter name="tenant" label="tenant" value={q.tenant} />
        <TextFilter name="environment" label="environment" value={q.environment} />
        <TextFilter name="sessionName" label="session" value={q.sessionName} />
        <SelectFilter name="expired" label="expired" value={q.expired} options={["false", "true"]} />
        <ColumnChooser set={BACKUP_COLUMN_SET} cols={props.cols ?? []} />
      </FilterForm>
      <ExportLinks list="backups" query={q} />
      <ColumnTable set={BACKUP_COLUMN_SET} rows={props.page.items} x={{ now: props.ctx.now }} testId="backups" cols={props.cols} />
      <ListPager path={LISTS.backups} query={q} page={props.page} noun="backups" empty="No backups match." />
    </Layout>
  );
}

/** The audit log's columns: when (each entry's place in the log), then those `cols=` picks. */
export const AUDIT_COLUMN_SET = columnSet<AuditRow, { now: number }>(
  "audit",
  { id: "time", header: "time", fields: ["id", "time"], cell: (a, x) => <Ago t={a.time} now={x.now} /> },
  [
    {
      id: "actor",
      header: "actor",
      fields: ["actor", "role"],
      cell: (a) => (
        <>
          {a.actor} <span class="muted">({a.role})</span>
        </>
      ),
    },
    { id: "action", header: "action", fields: ["action"], cell: (a) => a.action },
    {
      id: "target",
      header: "target",
      fields: ["targetClass", "targetName", "batchId"],
      attrs: () => ({ class: "breakable" }),
      cell: (a) => (
        <>
          {/* A bulk action's own row names its filter, not an agent: it opens the batch's page. */}
          {a.targetClass === BATCH_TARGET_CLASS && a.batchId ? (
            <a href={batchHref(a.batchId)} data-testid="audit-batch-link">
              {a.targetClass} · {a.targetName}
            </a>
          ) : (
            <a href={agentHref({ agentClass: a.targetClass, agentName: a.targetName })}>
              {a.targetClass} · {a.targetName}
            </a>
          )}
          {a.targetClass !== BATCH_TARGET_CLASS && a.batchId ? (
            <>
              {" "}
              <a href={batchHref(a.batchId)}>(its batch)</a>
            </>
          ) : null}
        </>
      ),
    },
    { id: "reason", header: "reason", fields: ["reason"], attrs: () => ({ class: "breakable" }), cell: (a) => a.reason },
    {
      id: "result",
      header: "result",
      fields: ["result", "error"],
      attrs: (a) => ({ "data-result": a.result }),
      cell: (a) => (
        <>
          <Status value={a.result} />
          {a.error ? <div class="muted">{a.error}</div> : null}
          {/* A partial action: the sentence the read-back gave (what still runs, or why the alarm did not run). */}
          <AuditNotice after={a.after} />
        </>
      ),
    },
    {
      id: "change",
      header: "before → after",
      fields: ["before", "after"],
      attrs: (a) => ({ title: runsOf(a.before, a.after) }),
      cell: (a) => (a.before || a.after ? `${statusOf(a.before)} → ${statusOf(a.after)}` : "—"),
    },
  ],
);

/** Every admin action, allowed or refused: who, why, on what, before and after. */
export function AuditPage(props: { ctx: PageContext; query: Query; page: Page<AuditRow>; cols?: readonly string[] }) {
  const q = props.query;
  return (
    <Layout ctx={props.ctx} title="Audit log" active={LISTS.audit}>
      <FilterForm action={LISTS.audit}>
        <TextFilter name="actor" label="actor" value={q.actor} />
        <SelectFilter name="action" label="action" value={q.action} options={AUDIT_ACTIONS} />
        <TextFilter name="targetName" label="target" value={q.targetName} />
        <SelectFilter name="result" label="result" value={q.result} options={AUDIT_RESULTS} />
        <TextFilter name="since" label="since" value={q.since} placeholder="1h or 2026-11-21T00:00Z" />
        <ColumnChooser set={AUDIT_COLUMN_SET} cols={props.cols ?? []} />
      </FilterForm>
      <TimePresets path={LISTS.audit} query={q} />
      <ExportLinks list="audit" query={q} />
      <ColumnTable set={AUDIT_COLUMN_SET} rows={props.page.items} x={{ now: props.ctx.now }} testId="audit" cols={props.cols} />
      <ListPager path={LISTS.audit} query={q} page={props.page} noun="audit entries" empty="No audit entries match." />
    </Layout>
  );
}

/** A partial action's notice in the audit: the read-back's facts in words, or an older row's stored sentence as it is. */
function AuditNotice(props: { after: unknown }) {
  const notice = auditNoticeWords(props.after);
  return notice ? (
    <div class="warn" data-testid="audit-notice">
      {notice}
    </div>
  ) : null;
}

/** Run counts before and after, as a tooltip (the full records stay in D1 and the JSON API). */
const runsOf = (b: unknown, a: unknown) => `runs ${countOf(b)} → ${countOf(a)}`;
const countOf = (v: unknown) => (v && typeof v === "object" && "runCount" in v ? String((v as { runCount: unknown }).runCount) : "?");
const statusOf = (v: unknown) => (v && typeof v === "object" && "status" in v ? String((v as { status: unknown }).status) : "—");

/**
 * Paid operations that may have run twice, until someone resolves them. Without an `open` filter the open
 * ones come first (paged), then the latest resolved ones; each open one has its Resolve control.
 */
export function OpsPage(props: { ctx: PageContext; query: Query; page: Page<OpRow>; resolved: OpRow[] | null; cols?: readonly string[] }) {
  const q = props.query;
  const role = props.ctx.user.role;
  return (
    <Layout ctx={props.ctx} title="Ambiguous operations" active={LISTS.ops}>
      <HotSpan list="ops" hours={props.ctx.hotWindowHours} />
      <p class="muted">
        Each op started before an eviction and may have run. Check it upstream, then record what happened: it ran (with a reference to its result), it did not
        run, or re-run it now where the op is idempotent. Every resolution goes to the agent's own ledger and the audit log.
      </p>
      <FilterForm action={LISTS.ops}>
        <SelectFilter name="open" label="open" value={q.open} options={["true", "false"]} />
        <TextFilter name="agentClass" label="agent class" value={q.agentClass} />
        <TextFilter name="agentName" label="agent name" value={q.agentName} />
        <TextFilter name="since" label="since" value={q.since} placeholder="1h or 2026-11-21T00:00Z" />
        <ColumnChooser set={OP_COLUMN_SET} cols={props.cols ?? []} />
      </FilterForm>
      <TimePresets path={LISTS.ops} query={q} />
      <ExportLinks list="ops" query={q} />
      {props.resolved ? <h2>Open</h2> : null}
      <OpsTable rows={props.page.items} now={props.ctx.now} role={role} testId="ops" uidPrefix="ops" cols={props.cols} />
      <ListPager
        path={LISTS.ops}
        query={q}
        page={props.page}
        noun="operations"
        empty={props.resolved ? "No open operations: nothing is waiting for a decision." : "No operations match."}
      />
      {props.resolved ? (
        <section>
          <h2>Recently resolved</h2>
          <OpsTable rows={props.resolved} now={props.ctx.now} role={role} testId="ops-resolved" uidPrefix="resolved" cols={props.cols} />
          {props.resolved.length === 0 ? (
            <p class="muted">None yet.</p>
          ) : (
            <p>
              <a href={listHref("ops", { open: "false", agentClass: q.agentClass, agentName: q.agentName })}>All resolved operations</a>
            </p>
          )}
        </section>
      ) : null}
    </Layout>
  );
}
