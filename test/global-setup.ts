import type { TestProject } from "vitest/node";
import { startAlertReceiver } from "./alert-receiver";
import { startOtlpReceiver } from "./otlp-receiver";

/** Starts the real OTLP receiver once for the whole run and tells tests (and workerd bindings) its port. */
export default async function setup(project: TestProject) {
  const { port, server } = await startOtlpReceiver();
  project.provide("otlpPort", port);
  // The webhook receiver for alert deliveries (test/alert-receiver.ts).
  const alerts = await startAlertReceiver();
  project.provide("alertPort", alerts.port);
  return async () => {
    for (const s of [server, alerts.server]) {
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    }
  };
}

declare module "vitest" {
  interface ProvidedContext {
    otlpPort: number;
    alertPort: number;
  }
}
