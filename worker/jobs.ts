/**
 * The jobs room's one door (scripts/check-rooms.ts): what the serving and ingest rooms may start or read of background
 * work (alerts, reconciliation, bulk actions). Everything else under worker/alerts, worker/reconcile and worker/bulk
 * is the room's own; a new caller adds its name here, so the rooms check sees every edge into the jobs.
 */

// Routes: the API's alert and reconcile passes, the agent page's reconciliation, the alerts page's settings.
export { alertAlarmLoopsInBackground } from "./alerts/alarm-loop";
export { alertBudgetInBackground } from "./alerts/budget";
export { type AlertEnv, alertConfig } from "./alerts/config";
export { alertDeployStormsInBackground } from "./alerts/deploy-storm";
// Ingest: an ingested batch's exhaustion wave and its alerts, raised and delivered here.
export { exhaustionWaveAlerts } from "./alerts/exhaustion-wave";
export type { Alert } from "./alerts/payloads";
export { raiseAlerts } from "./alerts/raise";
export { alertStuckInBackground } from "./alerts/stuck";
export { alertTelemetryInBackground } from "./alerts/telemetry";
// Routes: the bulk page starts a batch; the bulk consumer runs it.
export { BULK_ACTIONS, type BulkAction } from "./bulk/messages";
export { recordRefusedBatch, startBatch } from "./bulk/start";
// Routes: an action's target read back once it answered.
export { reconcileAfterAction } from "./reconcile/after-action";
export { recordFindings } from "./reconcile/agent";
export { PAGE_RECONCILE_AFTER_MS, reconcileStale } from "./reconcile/pass";
