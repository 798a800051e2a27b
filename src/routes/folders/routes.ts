import { createRouter } from "../../lib/openapi";

export const foldersRouter = createRouter();
