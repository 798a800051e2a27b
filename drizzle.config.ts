import { defineConfig } from "drizzle-kit";

// `npx drizzle-kit generate --name <change>` writes the next SQL migration from src/db/schema.ts.
// Hand-written parts (FTS tables, triggers) go in `drizzle-kit generate --custom` files.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
