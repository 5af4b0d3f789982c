/**
 * The demo fleet Worker: the observed runtime's agents, deployed as a customer
 * deploys theirs. The console Worker binds these classes by script_name.
 */
import { app } from "./app";

export default { fetch: app.fetch } satisfies ExportedHandler<import("./env").Env>;

export { ChatAgent } from "./chat";
export { DemoFiberAgent } from "./demo/fiber-agent";
export { DemoSessionAgent } from "./demo/session-agent";
export { SessionAgent } from "./session";
