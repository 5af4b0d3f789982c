/** The console's read models, one module per concern. */
export * from "./agents";
export * from "./audit";
export * from "./backups";
export * from "./errors";
export * from "./events";
export * from "./fibers";
export * from "./incidents";
export * from "./ops";
export * from "./owner";
export * from "./overview";
export * from "./paging";
export * from "./search";
export * from "./sessions";
export { parseFilters, relativeMs, resolveInstant, TIME_PRESETS } from "./filters";
export * from "./open-work";
export * from "./bulk-targets";
export * from "./bulk-batches";
export * from "./stuck";
