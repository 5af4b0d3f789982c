import { type AlertRecord, recordAlerts, recordDelivery } from "../../src/store/alerts";
import { type AlertEnv, type AlertMessage, alertConfig } from "./config";
import { type Alert, payloadFor } from "./payloads";

export type RaiseResult = { queued: number; rateLimited: number; duplicates: number; off?: string };

/** Queue sendBatch takes at most 100 messages. */
const SEND_CHUNK = 100;

/**
 * Records each alert once per configured channel and queues the new ones within their priority's hourly budget for
 * delivery; the others are recorded as rate_limited, which /alerts counts.
 * An alert recorded before (same key and channel) is a duplicate: nothing is sent again. With alerts off
 * (no URL, or an invalid setting) nothing is recorded.
 */
export async function raiseAlerts(env: AlertEnv & { DB: D1Database }, alerts: Alert[], now = Date.now()): Promise<RaiseResult> {
  const config = alertConfig(env);
  if (!config.enabled) return { queued: 0, rateLimited: 0, duplicates: 0, off: config.reason };
  if (!alerts.length) return { queued: 0, rateLimited: 0, duplicates: 0 };
  const records: (AlertRecord & { alert: Alert; url: string })[] = alerts.flatMap((a) =>
    config.channels.map((ch) => ({
      alertKey: a.key,
      channel: ch.channel,
      kind: a.kind,
      agentClass: a.agentClass,
      agentName: a.agentName,
      subjectId: a.subjectId,
      summary: a.summary,
      alert: a,
      url: ch.url,
    })),
  );
  const inserted = await recordAlerts(env.DB, records, { now, budgets: config.budgets });
  const byKey = new Map(records.map((r) => [`${r.channel}\n${r.alertKey}`, r]));
  const messages: AlertMessage[] = inserted
    .filter((r) => r.status === "queued")
    .map((r) => {
      const rec = byKey.get(`${r.channel}\n${r.alertKey}`)!;
      return {
        alertKey: r.alertKey,
        channel: rec.channel as AlertMessage["channel"],
        body: payloadFor(rec.channel as AlertMessage["channel"], rec.alert, config.consoleUrl),
      };
    });
  for (let i = 0; i < messages.length; i += SEND_CHUNK) {
    const chunk = messages.slice(i, i + SEND_CHUNK);
    try {
      await env.ALERTS_QUEUE!.sendBatch(chunk.map((body) => ({ body, contentType: "json" as const })));
    } catch (e) {
      // The rows exist, so a later detection will not retry them: say so in the log and on the row.
      const error = `could not queue the delivery: ${e instanceof Error ? e.message : String(e)}`;
      console.error(`[alerts] ${error}`);
      for (const m of chunk) await recordDelivery(env.DB, m, { status: "failed", attempts: 0, httpStatus: null, lastError: error, now });
    }
  }
  return { queued: messages.length, rateLimited: inserted.filter((r) => r.status === "rate_limited").length, duplicates: records.length - inserted.length };
}
