// One import for the tests; the helpers live by concern in ./support/.
export { env } from "cloudflare:workers";
export * from "./support/fixtures";
export * from "./support/http";
export * from "./support/tokens";
export * from "./support/logs";
export * from "./support/concurrency";
export * from "./support/plans";
