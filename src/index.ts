import { app } from "./app";
import type { Env } from "./env";
import { handleScheduled } from "./scheduled";

export { CompanyClock } from "./company-clock/object";
export { ImportWorkflow } from "./imports/workflow";

export default {
  fetch: app.fetch,
  scheduled: handleScheduled,
} satisfies ExportedHandler<Env>;
