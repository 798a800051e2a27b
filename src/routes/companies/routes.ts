import { createRouter } from "../../lib/openapi";

export const companiesRouter = createRouter();
