/** Bench entry: the real Worker plus two otherwise identical agents, with and without telemetry. */

export * from "../worker/index";
export { default } from "../worker/index";
export { BenchDemoLikeAgent, BenchDemoLikeFlushAgent, BenchPlainAgent, BenchTelemetryAgent, BenchTelemetryFlushAgent } from "./agents";
