/**
 * The deployed Worker: the console (worker/index.ts) plus the Think-based chat
 * agent. Kept apart so suites that do not need Think never load its large
 * module graph.
 */
export { default } from "./index";
export * from "./index";
export { ChatAgent } from "../src/session/chat";
