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
export * from "./sessions";
export { parseFilters } from "./filters";
export * from "./open-work";
export * from "./stuck";
