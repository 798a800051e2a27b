import { createRouter } from "../../lib/openapi";

export const itemsRouter = createRouter();
