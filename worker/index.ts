import { instrument } from "@microlabs/otel-cf-workers";
import { hotWindowHours, retentionDays, runRetention } from "../src/store/retention";
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
  },
};

export default instrument(handler, otelConfig);
