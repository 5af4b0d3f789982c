import { instrument } from "@microlabs/otel-cf-workers";
import { hotWindowHours, retentionDays, runRetention } from "../src/store/retention";
import { historyConfig } from "../src/store/history/config";
import { runHistoryRetention } from "../src/store/history/retention";
import { ALERTS_QUEUE_NAME, handleAlertBatch } from "./alerts/consumer";
import { alertStuckInBackground } from "./alerts/stuck";
import { app } from "./app";
import { type Env, TELEMETRY_DLQ_NAME } from "./env";
import { BULK_QUEUE_NAME } from "./bulk/messages";
import { handleBulkBatch } from "./bulk/consumer";
import { boundsFromEnv } from "./ingest/bounds";
import { handleDeadLetterBatch, handleTelemetryBatch } from "./ingest/consumer";
import { otelConfig } from "./otel";
import { RECONCILE_CRON, reconcileSettings, reconcileStale } from "./reconcile/pass";

const handler: ExportedHandler<Env> = {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),

  async queue(batch, env) {
    if (batch.queue === ALERTS_QUEUE_NAME) await handleAlertBatch(batch, env);
    else if (batch.queue === BULK_QUEUE_NAME) await handleBulkBatch(batch, env);
    else if (batch.queue === TELEMETRY_DLQ_NAME) await handleDeadLetterBatch(batch, env);
    else await handleTelemetryBatch(batch, env);
  },

  async scheduled(controller, env, ctx) {
    if (controller.cron === RECONCILE_CRON) {
      ctx.waitUntil(
        reconcileStale(env, reconcileSettings(env)).then(
          (r) => console.log(`[reconcile] asked ${r.length} agents: ${r.reduce((n, a) => n + a.findings.length, 0)} findings, ${r.filter((a) => a.error).length} could not answer`),
          (e) => console.error(`[reconcile] failed: ${e instanceof Error ? e.message : String(e)}`),
        ),
      );
      ctx.waitUntil(alertStuckInBackground(env));
      return;
    }
    ctx.waitUntil(
      // Rows dated past ingest's clock-skew allowance cannot be real (ingest refuses them): retention deletes them too.
      runRetention(env.DB, { maxAgeDays: retentionDays(env.RETENTION_DAYS), hotWindowHours: hotWindowHours(env.HOT_WINDOW_HOURS), maxFutureSkewMs: boundsFromEnv(env).maxFutureSkewMs }).then(
        (r) => console.log(`[retention] cutoff ${new Date(r.cutoff).toISOString()} deleted ${JSON.stringify(r.deleted)}${r.complete ? "" : " (more left)"}`),
        (e) => console.error(`[retention] failed: ${e instanceof Error ? e.message : String(e)}`),
      ),
    );
    ctx.waitUntil(historyRetention(env));
  },
};

/** The R2 history's own retention (HISTORY_RETENTION_DAYS): whole expired days, in bounded steps. An invalid setting deletes nothing. */
async function historyRetention(env: Env): Promise<void> {
  const days = historyConfig(env).retentionDays;
  if (!env.HISTORY || days === null) return;
  try {
    const r = await runHistoryRetention(env.HISTORY, { maxAgeDays: days });
    if (r.lists > 1 || !r.complete) console.log(`[retention] history: cutoff ${new Date(r.cutoff).toISOString()} deleted ${r.objectsDeleted} objects, days ${r.daysDeleted.join(", ") || "none"}${r.complete ? "" : " (more left)"}`);
  } catch (e) {
    console.error(`[retention] history failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}

export default instrument(handler, otelConfig);
