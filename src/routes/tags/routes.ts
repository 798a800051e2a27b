import { createRouter } from "../../lib/openapi";

export const tagsRouter = createRouter();
