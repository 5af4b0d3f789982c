import type { ListRunsOutput, StatusOutput } from "../../src/admin-rpc/contract";
import { AdminActions } from "../components/actions";
import { Status } from "../components/status";
import { ago, bytes, duration, href, iso } from "../format";
import { Layout, type PageContext } from "../layout";
import { detailHref } from "../links";

type FiberSummary = { fiberId: string; name: string; startedAt: number | null; outcome: string | null; lastSeen: number; snapshotBytes: number | null };

/**
 * One agent: its live state through admin RPC (status, alarm, live runs) and
 * its fiber history from the projection. Live parts refresh through htmx.
 */
export function AgentPage(props: {
  ctx: PageContext;
  agentClass: string;
  agentName: string;
  live: { status: StatusOutput; runs: ListRunsOutput } | { error: string };
  history: FiberSummary[];
}) {
  const base = `/agents/${encodeURIComponent(props.agentClass)}/${encodeURIComponent(props.agentName)}`;
  return (
    <Layout ctx={props.ctx} title={`${props.agentClass} · ${props.agentName}`} active="/fibers">
      <div id="agent-live" data-live hx-get={`${base}/live`} hx-trigger={`every ${props.ctx.pollSeconds}s, refresh`} hx-swap="innerHTML">
        <AgentLive ctx={props.ctx} base={base} live={props.live} />
      </div>
      <AdminActions agentClass={props.agentClass} agentName={props.agentName} role={props.ctx.user.role} />
      <h2>Fiber history</h2>
      <table>
        <thead>
          <tr><th>fiber</th><th>name</th><th>started</th><th>outcome</th><th class="num">last snapshot</th></tr>
        </thead>
        <tbody>
          {props.history.map((f) => (
            <tr>
              <td><a class="mono" href={detailHref("fibers", f.fiberId, props)}>{f.fiberId}</a></td>
              <td>{f.name}</td>
              <td title={iso(f.startedAt)}>{ago(f.startedAt, props.ctx.now)}</td>
              <td><Status value={f.outcome ?? "running"} /></td>
              <td class="num">{bytes(f.snapshotBytes)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p><a href={href("/fibers", { agentClass: props.agentClass, agentName: props.agentName })}>All fibers of this agent »</a></p>
    </Layout>
  );
}

/** The live part: derived status, next alarm, live runs, schedules and chat-recovery records. */
export function AgentLive(props: { ctx: PageContext; base: string; live: { status: StatusOutput; runs: ListRunsOutput } | { error: string } }) {
  if ("error" in props.live) return <p class="error-message">Live state unavailable: {props.live.error}</p>;
  const { status, runs } = props.live;
  return (
    <>
      <dl class="facts">
        <dt>status</dt><dd data-testid="agent-status"><Status value={status.status} /></dd>
        <dt>next alarm</dt><dd>{status.nextAlarm ? `${iso(status.nextAlarm)} (${duration(status.nextAlarm - props.ctx.now)} from now)` : "none"}</dd>
        <dt>schedules</dt><dd>{status.pendingScheduleCount}</dd>
        <dt>chat recovery records</dt>
        <dd>{status.chatRecoveryIncidents.length ? status.chatRecoveryIncidents.map((i) => <div><Status value={i.status} /> attempt {i.attempt ?? "?"} {i.reason ?? ""}</div>) : "none"}</dd>
      </dl>
      <h2>Live runs (cf_agents_runs)</h2>
      {runs.runs.length ? (
        <table>
          <thead><tr><th>run</th><th>name</th><th>age</th><th class="num">snapshot</th></tr></thead>
          <tbody>
            {runs.runs.map((r) => (
              <tr>
                <td><a class="mono" href={`${props.base}/runs/${encodeURIComponent(r.id)}`}>{r.id}</a></td>
                <td>{r.name}</td>
                <td>{duration(r.ageMs)}</td>
                <td class="num">{bytes(r.snapshotBytes)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted">No live runs.</p>
      )}
      {runs.managedFibers.length ? (
        <>
          <h2>Managed fibers</h2>
          <table>
            <thead><tr><th>fiber</th><th>name</th><th>status</th><th>created</th></tr></thead>
            <tbody>{runs.managedFibers.map((f) => <tr><td class="mono">{f.fiberId}</td><td>{f.name}</td><td><Status value={f.status} /></td><td>{ago(f.createdAt, props.ctx.now)}</td></tr>)}</tbody>
          </table>
        </>
      ) : null}
    </>
  );
}
