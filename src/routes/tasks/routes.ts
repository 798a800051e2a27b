import { conditionalRecord } from "../../lib/conditional";
import {
  MessageEnvelope,
  createRouter,
  dataEnvelope,
  errorResponses,
  jsonBody,
  jsonResponse,
  resultEnvelope,
  scopedRoute,
} from "../../lib/openapi";
import { created, done, ok, page, updated } from "../../lib/respond";
import { MAX_EXACT_SEARCH_TOTAL } from "../../lib/search";
import {
  MAX_EXACT_TOTAL,
  createTask,
  deleteTask,
  getTask,
  listTasks,
  taskOutput,
  updateTask,
  type Caller,
} from "../../records/tasks";
import { nudgeWebhooks } from "../../company-clock/handoff/worker";
import {
  CreateTaskSchema,
  ListTasksQuery,
  TRANSITIONS_DESCRIPTION,
  TaskListEnvelope,
  TaskParams,
  TaskSchema,
  UpdateTaskSchema,
} from "../../schemas/tasks";

/** What If-Match on its PATCH and DELETE compares: the ETag of its GET (src/lib/conditional.ts). */
const taskRecord = conditionalRecord({
  what: "Task",
  table: "tasks",
  params: TaskParams,
  load: async (c, { task_id }) => {
    const row = await getTask(c.var.db, c.var.companyId, task_id);
    return { id: row.id, version: row.version, data: taskOutput(row) };
  },
});

const tags = ["Tasks"];

export const tasksRouter = createRouter();

const callerOf = (c: { var: { companyId: number; auth: { accountId: number; userId: number } } }): Caller => ({
  companyId: c.var.companyId,
  accountId: c.var.auth.accountId,
  userId: c.var.auth.userId,
});

const REFERENCES =
  "`ownerid` (default: the caller's user) and an assignee of type `user` must be " +
  "users of the caller's account; an assignee of type `contact` a " +
  "contact of the company, and `item_id` (extension) an item of the company: " +
  "otherwise 400 naming the field. `assignee_type` and `assignee_id` " +
  "go together (one without the other is 400); `assignee_id: 0` unassigns. The " +
  "references are checked again inside the write, so one deleted " +
  "meanwhile never leaves a dangling task. `due_at` is UTC, `YYYY-MM-DD HH:MM:SS`, a real date and time.";

tasksRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/tasks",
    operationId: "listTasks",
    scope: "tasks:read",
    tags,
    summary: "List tasks",
    description:
      "Ordered by due_at, then task_id (stable across pages). Filters combine with " +
      "AND. `meta.total` counts every match: unfiltered and by " +
      `status exactly; filtered by assignee_id, item_id or q up to ${MAX_EXACT_TOTAL} (${MAX_EXACT_SEARCH_TOTAL} with \`q\`), beyond which ` +
      "`meta.total_exact` is false and total is that bound (a lower bound).",
    request: { query: ListTasksQuery },
    responses: { 200: jsonResponse(TaskListEnvelope, "A page of tasks") },
  }),
  async (c) => {
    const result = await listTasks(c.var.db, c.var.companyId, c.req.valid("query"));
    return page(c, { rows: result.rows.map(taskOutput), meta: result.meta });
  },
);

tasksRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/tasks",
    operationId: "createTask",
    scope: "tasks:write",
    tags,
    summary: "Create a task",
    description: `\`title\` (1-200 characters) and \`due_at\` are required. status defaults to open (any of the six may be given), priority to normal (low, normal, high, urgent). ${REFERENCES} The response carries the task, with its task_id and public_id.`,
    request: { body: jsonBody(CreateTaskSchema) },
    responses: {
      201: jsonResponse(resultEnvelope(TaskSchema, "TaskCreated"), "Task created"),
      409: errorResponses.conflict,
    },
  }),
  async (c) => {
    const row = await createTask(c.var.db, callerOf(c), c.req.valid("json"));
    await nudgeWebhooks(c.env, c.var.companyId);
    return created(c, "Task created", taskOutput(row));
  },
);

tasksRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/tasks/{task_id}",
    operationId: "getTask",
    etag: true,
    scope: "tasks:read",
    tags,
    summary: "Get a task",
    description:
      "The path takes the task's integer task_id or its public_id. A task of another " +
      "company is 404, like one that does not exist.",
    request: { params: TaskParams },
    responses: { 200: jsonResponse(dataEnvelope(TaskSchema, "TaskEnvelope"), "The task") },
  }),
  async (c) => ok(c, taskOutput(await getTask(c.var.db, c.var.companyId, c.req.valid("param").task_id))),
);

tasksRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/tasks/{task_id}",
    operationId: "updateTask",
    precondition: taskRecord,
    scope: "tasks:write",
    tags,
    summary: "Update a task",
    description:
      `At least one field (an empty body is 400 \`No updatable fields provided\`); the path takes task_id or public_id. ${TRANSITIONS_DESCRIPTION} ` +
      `${REFERENCES} The status change is race-safe: the write requires the status it was checked against, so of two concurrent changes the ` +
      "second is re-checked against the first's result (400 when no longer allowed, 409 when the task keeps changing).",
    request: { params: TaskParams, body: jsonBody(UpdateTaskSchema) },
    responses: {
      200: jsonResponse(resultEnvelope(TaskSchema, "TaskUpdated"), "Task updated"),
      409: errorResponses.conflict,
    },
  }),
  async (c) => {
    const row = await updateTask(c.var.db, callerOf(c), c.req.valid("param").task_id, c.req.valid("json"));
    await nudgeWebhooks(c.env, c.var.companyId);
    return updated(c, "Task updated", taskOutput(row));
  },
);

tasksRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/tasks/{task_id}",
    operationId: "deleteTask",
    precondition: taskRecord,
    scope: "tasks:write",
    tags,
    summary: "Delete a task",
    description: "Hard delete; the path takes task_id or public_id.",
    request: { params: TaskParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Task deleted") },
  }),
  async (c) => {
    await deleteTask(c.var.db, c.var.companyId, c.req.valid("param").task_id);
    await nudgeWebhooks(c.env, c.var.companyId);
    return done(c, "Task deleted");
  },
);
