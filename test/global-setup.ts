import type { TestProject } from "vitest/node";
import { startOtlpReceiver } from "./otlp-receiver";

/** Starts the real OTLP receiver once for the whole run and tells tests (and workerd bindings) its port. */
export default async function setup(project: TestProject) {
  const { port, server } = await startOtlpReceiver();
  project.provide("otlpPort", port);
  return async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  };
}

declare module "vitest" {
  interface ProvidedContext {
    otlpPort: number;
  }
}
