import type { ResidencyOutput } from "../../src/admin-rpc/residency-contract";
import type { AlarmRate, ResidentEstimate, SilentWakeRate } from "../../src/store/read-models/residency";
import {
  alarmRateSentence,
  cadence,
  hostJobLabel,
  LOOP_RULE,
  RESIDENT_METHOD,
  residencySummary,
  residentSentence,
  SILENT_WAKES_RULE,
  silentWakeAgent,
  UNKNOWN_SINCE,
} from "../awake-words";
import { ColumnTable, columnSet } from "../components/columns";
import { Time } from "../components/time";
import { count, duration } from "../format";
import { Layout, type PageContext } from "../layout";
import { agentHref, href, LISTS } from "../links";

/** What the agent panel is drawn from: the agent's own answer (or why there is none), and the console's figures. */
export type AwakeFacts = {
  residency: ResidencyOutput | { error: string };
  alarms: AlarmRate | null;
  resident: ResidentEstimate;
};

/** The id of the agent page's "awake" panel (links scroll to it). */
export const AWAKE_PANEL = "awake";

/** When a holder began, or that the SDK does not record it. */
function Since(props: { t: number | null }) {
  return props.t === null ? <span class="muted">{UNKNOWN_SINCE}</span> : <Time t={props.t} />;
}

/** The agent page's "why is this agent awake" panel (an htmx fragment, loaded after the page). */
export function AwakePanel(props: { ctx: PageContext; facts: AwakeFacts }) {
  const { residency: r, alarms, resident } = props.facts;
  return (
    <div data-testid="awake-panel">
      {"error" in r ? (
        <p class="muted" data-testid="awake-error">{`The agent could not say what keeps it resident: ${r.error}`}</p>
      ) : (
        <>
          <p data-testid="awake-summary">{residencySummary(r)}</p>
          <table data-testid="awake-holders">
            <thead>
              <tr>
                <th>what</th>
                <th>detail</th>
                <th>since</th>
              </tr>
            </thead>
            <tbody>
              <tr data-holder="instance">
                <td>this instance</td>
                <td>{`awake ${duration(r.readAt - r.instance.since)} when asked (a read of an evicted agent wakes it)`}</td>
                <td>
                  <Since t={r.instance.since} />
                </td>
              </tr>
              <tr data-holder="keepalive" data-count={r.keepAlive.holders ?? ""}>
                <td>keepAlive</td>
                <td data-testid="awake-keepalive">
                  {r.keepAlive.holders === null
                    ? "holders unknown (this SDK version keeps no count we can read)"
                    : `${r.keepAlive.holders} holder${r.keepAlive.holders === 1 ? "" : "s"}${r.keepAlive.nextHeartbeat ? `; next heartbeat in ${duration(r.keepAlive.nextHeartbeat - r.readAt)}` : ""}`}
                </td>
                <td>
                  {r.keepAlive.heartbeatSince !== null ? (
                    <Time t={r.keepAlive.heartbeatSince} />
                  ) : (
                    <span class="muted">{r.keepAlive.holders ? UNKNOWN_SINCE : "—"}</span>
                  )}
                </td>
              </tr>
              <tr data-holder="alarm">
                <td>next alarm</td>
                <td data-testid="awake-next-alarm">{r.nextAlarm === null ? "none set" : `in ${duration(r.nextAlarm - r.readAt)}`}</td>
                <td>{r.nextAlarm === null ? "—" : <Time t={r.nextAlarm} />}</td>
              </tr>
              {r.schedules.map((s) => (
                <tr data-holder="schedule" data-schedule-id={s.id}>
                  <td>schedule</td>
                  <td>
                    <span class="mono">{s.callback}</span> · {cadence(s)} · next <Time t={s.nextAt} />
                    {s.running ? " · running now" : ""}
                  </td>
                  <td>
                    <Since t={s.since} />
                  </td>
                </tr>
              ))}
              {r.hostJobs.map((j) => (
                <tr data-holder="sdk-job" data-job-id={j.id}>
                  <td>SDK job</td>
                  <td>
                    {hostJobLabel(j)} · next <Time t={j.nextAt} />
                  </td>
                  <td>
                    <Since t={j.since} />
                  </td>
                </tr>
              ))}
              <tr data-holder="connections" data-count={r.connections.count}>
                <td>connections</td>
                <td data-testid="awake-connections">{`${count(r.connections.count)} open`}</td>
                <td>{r.connections.count ? <Since t={null} /> : "—"}</td>
              </tr>
              {r.work.map((w) => (
                <tr data-holder="work" data-kind={w.kind} data-run-id={w.id}>
                  <td>{`running ${w.kind.replace(/_/g, " ")}`}</td>
                  <td class="mono">{w.name ?? w.id}</td>
                  <td>
                    <Since t={w.since} />
                  </td>
                </tr>
              ))}
              {r.parked.tasks + r.parked.fibers > 0 ? (
                <tr data-holder="parked">
                  <td>parked</td>
                  <td>{`${r.parked.tasks} Tasks run(s) waiting, ${r.parked.fibers} managed fiber(s) pending or interrupted`}</td>
                  <td>—</td>
                </tr>
              ) : null}
            </tbody>
          </table>
        </>
      )}
      <p data-testid="awake-alarm-rate" data-per-hour={alarms ? Math.round(alarms.perHour) : 0} data-loop={alarms?.loop ? "true" : "false"}>
        {alarms?.loop ? <span class="badge warn">alarm loop</span> : null} {alarms ? alarmRateSentence(alarms) : "No schedule fired in the last hour."}
        {alarms ? (
          <span class="muted">
            {" "}
            First firing the console saw: <Time t={alarms.firstAt} />; last: <Time t={alarms.lastAt} />.
          </span>
        ) : null}
      </p>
      <p data-testid="awake-resident" data-low-ms={resident.lowMs} data-high-ms={resident.highMs}>
        {residentSentence(resident)} <span class="muted">{RESIDENT_METHOD}</span>
      </p>
    </div>
  );
}

/** /awake's alarm list: one declaration for the table and its phone cards (each cell labelled by its header). */
const ALARM_COLUMNS = columnSet<AlarmRate, null>(
  "awake",
  {
    id: "agent",
    header: "agent",
    fields: ["agentClass", "agentName"],
    cell: (a) => (
      <a href={agentHref(a, "", AWAKE_PANEL)}>
        {a.agentClass} · {a.agentName}
      </a>
    ),
  },
  [
    { id: "per_hour", header: "alarms/hour", num: true, fields: ["perHour"], cell: (a) => count(Math.round(a.perHour)) },
    { id: "firings", header: "firings", num: true, fields: ["firings"], cell: (a) => count(a.firings) },
    { id: "last", header: "last firing", fields: ["lastAt"], cell: (a) => <Time t={a.lastAt} /> },
    {
      id: "work",
      header: "work",
      fields: ["loop", "idle"],
      cell: (a) => (a.loop ? <span class="badge warn">alarm loop, nothing to do</span> : a.idle ? "none" : "runs open or seen"),
    },
  ],
);

/** /awake's list of Durable Objects woken by alarms that reported nothing. */
const SILENT_WAKE_COLUMNS = columnSet<SilentWakeRate, null>(
  "awake-silent",
  {
    id: "agent",
    header: "agent",
    fields: ["agentClass", "agentName", "objectId"],
    cell: (w) =>
      w.agentClass && w.agentName ? (
        <a href={agentHref({ agentClass: w.agentClass, agentName: w.agentName }, "", AWAKE_PANEL)}>{silentWakeAgent(w)}</a>
      ) : (
        <span>{silentWakeAgent(w)}</span>
      ),
  },
  [
    { id: "per_hour", header: "wakes/hour", num: true, fields: ["perHour"], cell: (w) => (w.perHour === null ? "—" : count(Math.round(w.perHour))) },
    { id: "wakes", header: "wakes", num: true, fields: ["wakes"], cell: (w) => count(w.wakes) },
    { id: "last", header: "last wake", fields: ["lastAt"], cell: (w) => <Time t={w.lastAt} /> },
  ],
);

/** Agents whose alarm fired in the last hour, fastest first; loops (nothing to do) flagged. `idle` keeps only the loops. */
export function AwakePage(props: { ctx: PageContext; items: AlarmRate[]; loopsOnly: boolean; silentWakes: SilentWakeRate[] }) {
  return (
    <Layout ctx={props.ctx} title="Awake" active={LISTS.awake}>
      <p>
        {props.loopsOnly ? (
          <a href={LISTS.awake}>Every agent whose alarm fired in the last hour</a>
        ) : (
          <a href={href(LISTS.awake, { resident: "idle" })} data-testid="awake-idle-link">
            Only agents resident with nothing to do
          </a>
        )}
      </p>
      <p class="muted">{LOOP_RULE}</p>
      {props.items.length ? (
        <ColumnTable
          set={ALARM_COLUMNS}
          rows={props.items}
          x={null}
          testId="awake-list"
          rowAttrs={(a) => ({
            "data-agent": `${a.agentClass}/${a.agentName}`,
            "data-loop": a.loop ? "true" : "false",
            "data-per-hour": String(Math.round(a.perHour)),
          })}
        />
      ) : (
        <p data-testid="awake-empty">{props.loopsOnly ? "No agent is looping on alarms with nothing to do." : "No agent's alarm fired in the last hour."}</p>
      )}
      <h2>Woken by alarms that reported nothing</h2>
      <p class="muted">{SILENT_WAKES_RULE}</p>
      {props.silentWakes.length ? (
        <ColumnTable
          set={SILENT_WAKE_COLUMNS}
          rows={props.silentWakes}
          x={null}
          testId="awake-silent"
          rowAttrs={(w) => ({
            "data-object-id": w.objectId,
            "data-agent": w.agentClass && w.agentName ? `${w.agentClass}/${w.agentName}` : "",
            "data-wakes": String(w.wakes),
          })}
        />
      ) : (
        <p data-testid="awake-silent-empty">No Durable Object was woken by an alarm that reported nothing in the last hour.</p>
      )}
    </Layout>
  );
}
