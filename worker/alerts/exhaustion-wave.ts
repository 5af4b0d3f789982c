import { listHref } from "../../console/links";
import { exhaustedSinceIn, recordedAlertKeys } from "../../src/store/alerts";
import type { Store } from "../../src/store/partitions";
import type { Alert } from "./payloads";

const HOUR_MS = 3_600_000;

/** When exhaustions of one class are a wave (worker/config.ts EXHAUSTION_WAVE_*). */
export type WaveRule = { minIncidents: number; windowMs: number };

/** The wave alert of a class for the clock hour of `now`: one per class and hour, however long the wave lasts. */
export function exhaustionWaveAlert(agentClass: string, count: number, rule: WaveRule, now: number): Alert {
  const hour = new Date(Math.floor(now / HOUR_MS) * HOUR_MS).toISOString();
  const minutes = Math.round(rule.windowMs / 60_000);
  return {
    key: JSON.stringify(["exhaustion_wave", agentClass, hour]),
    kind: "exhaustion_wave",
    agentClass,
    // About every agent of the class: no agent name, like a class's re-spent alert.
    agentName: "",
    subjectId: hour,
    title: "Exhaustion wave",
    summary: `at least ${count} incidents of ${agentClass} exhausted in the last ${minutes} min; each one's own alert may be held back by the hourly budget`,
    path: listHref("incidents", { agentClass, status: "exhausted" }),
    at: now,
    details: { incidents: count, windowMinutes: minutes, threshold: rule.minIncidents, hour },
  };
}

/**
 * "Exhaustion wave": the classes of `exhaustedClasses` (those an ingested batch has just exhausted incidents of) with
 * at least `minIncidents` incidents exhausted within the window. A high-priority alert (src/store/alerts.ts), so the
 * flood of per-incident alerts it stands for cannot crowd it out. A class already alerted this hour is not counted again.
 */
export async function exhaustionWaveAlerts(store: Store, exhaustedClasses: string[], rule: WaveRule, now: number): Promise<Alert[]> {
  const classes = [...new Set(exhaustedClasses)];
  if (!classes.length) return [];
  const keyOf = (c: string) => exhaustionWaveAlert(c, 0, rule, now).key;
  const done = await recordedAlertKeys(store.home, classes.map(keyOf));
  const alerts: Alert[] = [];
  for (const agentClass of classes.filter((c) => !done.has(keyOf(c)))) {
    const since = now - rule.windowMs;
    // An incident exhausts after it was first seen: those first seen a window earlier still count.
    const count = await exhaustedSinceIn(store, { agentClass, since, firstSeenAfter: since - rule.windowMs, limit: rule.minIncidents });
    if (count >= rule.minIncidents) alerts.push(exhaustionWaveAlert(agentClass, count, rule, now));
  }
  return alerts;
}
