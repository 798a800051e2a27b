import { createRouter } from "../../lib/openapi";

export const departmentsRouter = createRouter();
