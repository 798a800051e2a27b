import { defineConfig } from "drizzle-kit";

// `npx drizzle-kit generate --name <change>` writes the next SQL migration from src/db/schema.ts.
// Hand-written parts (FTS tables) go in `drizzle-kit generate --custom` files; triggers are declared
// in scripts/triggers/ and written into a custom migration by `npm run triggers` (docs/triggers.md).
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
