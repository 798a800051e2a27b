import { createRouter } from "../../lib/openapi";

export const documentTypesRouter = createRouter();
