import type { AlertKind } from "../../src/store/alerts";
import type { SuppressedAlerts } from "../../src/store/read-models/alerts";
import { listHref } from "../links";

/** Alert kinds as people read them: the alerts log, the suppressed count, the overview's banner (exhaustive: a new kind is named here, or the typecheck fails). */
export const ALERT_KIND_LABEL: Record<AlertKind, string> = {
  exhausted: "recovery exhausted",
  ambiguous_op: "ambiguous op",
  stuck: "stuck",
  deploy_storm: "recovery storm after deploy",
  exhaust_soon: "likely to exhaust",
  respent: "tokens re-spent",
  alarm_loop: "alarm loop",
  telemetry: "events not reaching the console",
  exhaustion_wave: "exhaustion wave",
};

const count = (n: number) => n.toLocaleString("en-US");

/**
 * How many alerts the hourly budgets suppressed (recorded rate_limited, never sent) in a window, by kind, linking to
 * them. One small element of its own, so any page can show it: the alerts log does, and the overview may.
 */
export function SuppressedAlertsNote(props: { s: SuppressedAlerts; window: string }) {
  const s = props.s;
  const n = `${s.capped ? "at least " : ""}${count(s.alerts)}`;
  return (
    <p data-testid="alerts-suppressed" data-count={String(s.alerts)} data-capped={String(s.capped)} class={s.alerts ? "warn" : undefined}>
      {s.alerts ? (
        <>
          <a href={listHref("alerts", { status: "rate_limited" })}>
            {n} alert{s.alerts === 1 ? "" : "s"} suppressed
          </a>{" "}
          by the hourly budgets in the {props.window} ({count(s.deliveries)} deliveries, never sent):{" "}
          {s.byKind.map((k, i) => (
            <>
              {i ? ", " : ""}
              <span data-kind={k.kind} data-count={String(k.alerts)}>
                {ALERT_KIND_LABEL[k.kind as AlertKind] ?? k.kind} {count(k.alerts)}
              </span>
            </>
          ))}
          .
        </>
      ) : (
        `No alert was suppressed by the hourly budgets in the ${props.window}.`
      )}
    </p>
  );
}
