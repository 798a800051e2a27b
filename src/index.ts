import { app } from "./app";
import type { Env } from "./env";
import { email } from "./inbound/email-handler";
import { handleScheduled } from "./scheduled";

export { CompanyClock } from "./company-clock/object";
export { ImportWorkflow } from "./imports/workflow";

export default {
  fetch: app.fetch,
  scheduled: handleScheduled,
  email,
} satisfies ExportedHandler<Env>;
