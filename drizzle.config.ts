import { defineConfig } from "drizzle-kit";

/** migrations/ is generated from src/store/schema.ts; wrangler applies it (locally and remotely). */
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/store/schema.ts",
  out: "./migrations",
});
