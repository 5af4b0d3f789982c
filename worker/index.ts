import { instrument } from "@microlabs/otel-cf-workers";
import { runHistoryRetention } from "../src/store/history/retention";
import { runRetention } from "../src/store/retention";
import { alertAlarmLoopsInBackground } from "./alerts/alarm-loop";
import { alertBudgetInBackground } from "./alerts/budget";
import { handleAlertBatch } from "./alerts/consumer";
import { alertDeployStormsInBackground } from "./alerts/deploy-storm";
import { alertStuckInBackground } from "./alerts/stuck";
import { alertTelemetryInBackground } from "./alerts/telemetry";
import { app } from "./app";
import { handleBulkBatch } from "./bulk/consumer";
import { consoleConfig } from "./config";
import type { Env } from "./env";
import { handleDeadLetterBatch, handleTelemetryBatch } from "./ingest/consumer";
import { otelConfig } from "./otel";
import { reconcileStale } from "./reconcile/pass";
import { storeFromEnv } from "./store";
import { handleTail } from "./tail";
import { streamTail } from "./tail-stream";
import { CRONS, type CronKey, cronKeyOf, QUEUES, type QueueKey, queueKeyOf } from "./topology";

/** One consumer per declared queue: a queue added to topology.ts without a handler fails the typecheck. */
const queueHandlers: Record<QueueKey, (batch: MessageBatch<unknown>, env: Env) => Promise<void>> = {
  telemetry: handleTelemetryBatch,
  telemetryDlq: handleDeadLetterBatch,
  alerts: handleAlertBatch,
  batches: handleBulkBatch,
};

/** One job per declared cron, likewise. */
const cronJobs: Record<CronKey, (env: Env, ctx: ExecutionContext) => void> = {
  reconcile: (env, ctx) => {
    ctx.waitUntil(
      reconcileStale(env, consoleConfig(env).reconcile).then(
        (r) => {
          console.log(
            `[reconcile] asked ${r.length} agents: ${r.reduce((n, a) => n + a.findings.length, 0)} findings, ${r.filter((a) => a.error).length} could not answer`,
          );
          // What the agents said of their own telemetry: an agent whose events cannot reach the console is alerted on.
          return alertTelemetryInBackground(env, r);
        },
        (e) => console.error(`[reconcile] failed: ${e instanceof Error ? e.message : String(e)}`),
      ),
    );
    ctx.waitUntil(alertStuckInBackground(env));
    ctx.waitUntil(alertDeployStormsInBackground(env));
    ctx.waitUntil(alertBudgetInBackground(env));
    ctx.waitUntil(alertAlarmLoopsInBackground(env));
  },
  retention: (env, ctx) => {
    const { retention, ingest } = consoleConfig(env);
    // Every partition of the store keeps its own rows (src/store/partitions.ts): each runs retention on its own.
    const parts = storeFromEnv(env).parts;
    parts.forEach((db, i) => {
      const which = parts.length > 1 ? ` partition ${i}` : "";
      ctx.waitUntil(
        // Rows dated past ingest's clock-skew allowance cannot be real (ingest refuses them): retention deletes them too.
        runRetention(db, { maxAgeDays: retention.days, hotWindowHours: retention.hotWindowHours, maxFutureSkewMs: ingest.maxFutureSkewSeconds * 1000 }).then(
          (r) =>
            console.log(
              `[retention]${which} cutoff ${new Date(r.cutoff).toISOString()} deleted ${JSON.stringify(r.deleted)}${r.complete ? "" : " (more left)"}`,
            ),
          (e) => console.error(`[retention]${which} failed: ${e instanceof Error ? e.message : String(e)}`),
        ),
      );
    });
    ctx.waitUntil(historyRetention(env));
  },
};

/** Logs and throws: a batch or cron the console does not declare must not be handled as if it were another one. */
function refuse(message: string): never {
  console.error(`[worker] ${message}`);
  throw new Error(message);
}

const handler: ExportedHandler<Env> = {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),

  async queue(batch, env) {
    const key = queueKeyOf(batch.queue);
    // A malformed setting throws here (worker/config.ts): the batch is retried until it is fixed. Dead letters are
    // stored whatever the settings (they need none), so telemetry that exhausts its retries meanwhile is kept, not lost.
    if (key !== "telemetryDlq") consoleConfig(env);
    if (!key)
      refuse(
        `refused a batch from queue "${batch.queue}": this console consumes only ${Object.values(QUEUES)
          .map((q) => q.name)
          .join(", ")} (worker/topology.ts, wrangler.jsonc)`,
      );
    await queueHandlers[key](batch, env);
  },

  // The console as a Tail Worker of its agents' Workers (worker/tail.ts): the SDK's diagnostics messages, no package needed.
  async tail(items, env) {
    const r = await handleTail(items, env);
    if (r.losses || r.sendFailed) console.warn(`[tail] ${r.sent} events sent; ${r.losses} losses and ${r.sendFailed} unsent events kept as dead letters`);
  },

  // The same, as a streaming Tail Worker (worker/tail-stream.ts): events sent while the invocation still runs.
  tailStream: (onset, env, ctx) => streamTail(onset, env, ctx),

  async scheduled(controller, env, ctx) {
    consoleConfig(env);
    const key = cronKeyOf(controller.cron);
    if (!key) refuse(`refused cron "${controller.cron}": this console runs only ${Object.values(CRONS).join(", ")} (worker/topology.ts, wrangler.jsonc)`);
    cronJobs[key](env, ctx);
  },
};

/** The R2 history's own retention (HISTORY_RETENTION_DAYS): whole expired days, in bounded steps. */
async function historyRetention(env: Env): Promise<void> {
  const days = consoleConfig(env).history.retentionDays;
  if (!env.HISTORY) return;
  try {
    const r = await runHistoryRetention(env.HISTORY, { maxAgeDays: days });
    if (r.lists > 1 || !r.complete)
      console.log(
        `[retention] history: cutoff ${new Date(r.cutoff).toISOString()} deleted ${r.objectsDeleted} objects, days ${r.daysDeleted.join(", ") || "none"}${r.complete ? "" : " (more left)"}`,
      );
  } catch (e) {
    console.error(`[retention] history failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}

export default instrument(handler, otelConfig);
