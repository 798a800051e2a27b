import { z } from "@hono/zod-openapi";
import {
  Timestamp,
  idField,
  idQuery,
  integerString,
  optionalText,
  paginationQuery,
  requiredText,
  searchQuery,
} from "../lib/schemas";
import { isCalendarDate } from "../lib/time";

export const TASK_STATUSES = ["open", "todo", "in_progress", "review", "completed", "canceled"] as const;
export const TASK_PRIORITIES = ["low", "normal", "high", "urgent"] as const;
export const ASSIGNEE_TYPES = ["user", "contact"] as const;

export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Statuses a closed task (completed, canceled) can be reopened to. */
export const REOPEN_STATUSES: readonly TaskStatus[] = ["open", "todo"];
const CLOSED: readonly TaskStatus[] = ["completed", "canceled"];

/**
 * The statuses a task in `from` may move to (besides staying where it is). An active task (open,
 * todo, in_progress, review) moves freely among the active statuses and to completed or canceled;
 * a closed one (completed, canceled) only reopens, to open or todo.
 */
export function allowedNext(from: TaskStatus): TaskStatus[] {
  if (CLOSED.includes(from)) return [...REOPEN_STATUSES];
  return TASK_STATUSES.filter((s) => s !== from);
}

export const TRANSITIONS_DESCRIPTION =
  "Status transitions: open, todo, in_progress and review move freely among themselves and to completed or canceled; " +
  "completed and canceled only reopen, to open or todo (anything else is 400 naming the allowed statuses). " +
  "Sending the current status is accepted and changes nothing.";

/** `public_id`: `tsk_` and 20 URL-safe random characters (120 random bits). */
export const PUBLIC_ID_PATTERN = /^tsk_[A-Za-z0-9_-]{20}$/;
const TASK_ID_PATTERN = /^(0|[1-9][0-9]{0,15})$/;

const TIMESTAMP_PATTERN = /^(\d{4}-\d{2}-\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

/** A real UTC date and time `YYYY-MM-DD HH:MM:SS` (years 1900-9999; `2026-02-30 10:00:00` and `24:00:00` are not). */
export function isTimestamp(text: string): boolean {
  const match = TIMESTAMP_PATTERN.exec(text);
  if (!match || !isCalendarDate(match[1]!)) return false;
  return Number(match[2]) <= 23 && Number(match[3]) <= 59 && Number(match[4]) <= 59;
}

const DUE_AT_ERROR = "due_at must be a real date and time YYYY-MM-DD HH:MM:SS (UTC, years 1900-9999)";
const dueAt = z
  .string({ error: (issue) => (issue.input === undefined ? "due_at is required" : DUE_AT_ERROR) })
  .refine(isTimestamp, { error: DUE_AT_ERROR })
  .openapi({ example: "2027-03-31 09:00:00", description: "UTC, `YYYY-MM-DD HH:MM:SS`; must be a real date and time" });

const choiceError = (field: string, values: readonly string[]) => (issue: { input?: unknown }) =>
  issue.input === undefined ? `${field} is required` : `${field} must be one of: ${values.join(", ")}`;

const status = z.enum(TASK_STATUSES, { error: choiceError("status", TASK_STATUSES) }).openapi({ example: "open" });
const priority = z
  .enum(TASK_PRIORITIES, { error: choiceError("priority", TASK_PRIORITIES) })
  .openapi({ example: "normal" });

export const TaskSchema = z
  .object({
    task_id: z.number().int().openapi({ example: 17 }),
    public_id: z.string().openapi({
      example: "tsk_3kTMd9Qx0bW2yV7pLr5A",
      description: "Opaque, random and stable; usable in the path instead of task_id",
    }),
    title: z.string().openapi({ example: "Book the fire inspection" }),
    description: z.string().openapi({ example: "Call the city office before March", description: '"" when none' }),
    status: z.enum(TASK_STATUSES).openapi({ example: "open" }),
    priority: z.enum(TASK_PRIORITIES).openapi({ example: "normal" }),
    due_at: Timestamp.openapi({ example: "2027-03-31 09:00:00", description: "UTC, YYYY-MM-DD HH:MM:SS" }),
    ownerid: z.number().int().openapi({ example: 1, description: "A user of the account" }),
    assignee_type: z.enum(["user", "contact", ""]).openapi({
      example: "contact",
      description: '`user` (a user of the account), `contact` (a contact of the company), or "" ' + "when unassigned",
    }),
    assignee_id: z.number().int().openapi({ example: 42, description: "The user or contact id; 0 when unassigned" }),
    item_id: z
      .number()
      .int()
      .openapi({ example: 0, description: "Extension: the item the task belongs to; 0 for none" }),
    add_date: Timestamp,
    updated_at: Timestamp,
  })
  .openapi("Task");

/** An id that may be 0 to mean "none". */
const optionalRef = (field: string) =>
  z
    .number({ error: `${field} must be an integer` })
    .int({ error: `${field} must be an integer` })
    .min(0, { error: `${field} must be 0 (none) or an id` })
    .max(Number.MAX_SAFE_INTEGER, { error: `${field} is too large` });

const assigneeType = z
  .enum(["user", "contact", ""], {
    error: 'assignee_type must be one of: user, contact (or "" with assignee_id 0 to ' + "unassign)",
  })
  .openapi({ example: "contact", description: '`user` or `contact`, together with assignee_id; "" only to unassign' });
const assigneeId = optionalRef("assignee_id").openapi({
  example: 42,
  description: "Together with assignee_type; 0 unassigns",
});

const title = requiredText("title", 200).openapi({ example: "Book the fire inspection" });
const description = optionalText("description", 5000, { multiline: true }).openapi({
  example: "Call the city office before March",
});

/**
 * `assignee_type` and `assignee_id` go together: a user or contact needs both; unassigning is
 * `assignee_id: 0` (with `assignee_type` left out or "") or `assignee_type: ""` alone.
 */
function assigneePair(value: { assignee_type?: string; assignee_id?: number }, ctx: z.RefinementCtx) {
  const type = value.assignee_type;
  const id = value.assignee_id;
  if (type && !id) {
    ctx.addIssue({
      code: "custom",
      path: ["assignee_id"],
      message: `assignee_id is required with assignee_type ${type} (send both, or assignee_id 0 to unassign)`,
    });
  } else if (id && !type) {
    ctx.addIssue({
      code: "custom",
      path: ["assignee_type"],
      message: "assignee_type (user or contact) is required with assignee_id",
    });
  }
}

export const CreateTaskSchema = z
  .strictObject({
    title,
    due_at: dueAt,
    description,
    status: status.optional().openapi({ description: "Default open" }),
    priority: priority.optional().openapi({ description: "Default normal" }),
    ownerid: idField("ownerid")
      .optional()
      .openapi({ example: 1, description: "A user of the caller's account; default: the caller's user" }),
    assignee_type: assigneeType.optional(),
    assignee_id: assigneeId.optional(),
    item_id: optionalRef("item_id")
      .optional()
      .openapi({ example: 120, description: "Extension: an item of the company; 0 or absent for none" }),
  })
  .superRefine(assigneePair)
  .openapi("CreateTask");

export const UpdateTaskSchema = z
  .strictObject({
    title: title.optional(),
    description,
    due_at: dueAt.optional(),
    status: status.optional().openapi({ description: TRANSITIONS_DESCRIPTION }),
    priority: priority.optional(),
    ownerid: idField("ownerid").optional().openapi({ example: 1, description: "A user of the caller's account" }),
    assignee_type: assigneeType.optional(),
    assignee_id: assigneeId.optional(),
    item_id: optionalRef("item_id")
      .optional()
      .openapi({ example: 120, description: "Extension: an item of the company; 0 unlinks" }),
  })
  .superRefine((value, ctx) => {
    if (Object.values(value).every((v) => v === undefined)) {
      ctx.addIssue({ code: "custom", path: [], message: "No updatable fields provided" });
      return;
    }
    assigneePair(value, ctx);
  })
  .openapi("UpdateTask");

/** The path's task: its integer `task_id` or its `public_id`. */
export type TaskRef = { id: number } | { publicId: string };

const TASK_REF_ERROR = "task_id must be a task_id (a positive integer) or a public_id (tsk_ and 20 characters)";

export const TaskParams = z.object({
  task_id: z
    .string()
    .transform((value, ctx): TaskRef => {
      if (TASK_ID_PATTERN.test(value) && Number(value) >= 1 && Number(value) <= Number.MAX_SAFE_INTEGER)
        return { id: Number(value) };
      if (PUBLIC_ID_PATTERN.test(value)) return { publicId: value };
      ctx.addIssue({ code: "custom", message: TASK_REF_ERROR });
      return z.NEVER;
    })
    .openapi({
      param: { name: "task_id", in: "path" },
      type: "string",
      pattern: "^([1-9][0-9]{0,15}|tsk_[A-Za-z0-9_-]{20})$",
      example: "17",
      description: "The task's integer task_id, or its public_id (`tsk_…`)",
    }),
});

export const ListTasksQuery = z.object({
  ...paginationQuery(200, 50),
  status: z
    .enum(TASK_STATUSES, { error: `status must be one of: ${TASK_STATUSES.join(", ")}` })
    .optional()
    .openapi({ param: { name: "status", in: "query" } }),
  assignee_id: integerString("assignee_id must be 0 (unassigned tasks) or a user or contact id", 0)
    .optional()
    .openapi({
      param: { name: "assignee_id", in: "query" },
      description: "A user or contact id (both kinds match unless assignee_type is given), or 0 for unassigned tasks",
    }),
  assignee_type: z
    .enum(ASSIGNEE_TYPES, { error: "assignee_type must be one of: user, contact" })
    .optional()
    .openapi({
      param: { name: "assignee_type", in: "query" },
      description: "Extension: narrows assignee_id (required with it) to users or contacts",
    }),
  item_id: idQuery("item_id").openapi({ description: "Extension: the tasks of this item" }),
  q: searchQuery.openapi({
    description: "Word-prefix search over title and description; every word must match (case- and accent-insensitive).",
  }),
});

export const TaskListEnvelope = z
  .object({
    success: z.literal(true),
    data: z.array(TaskSchema),
    meta: z.object({
      total: z.number().int(),
      limit: z.number().int(),
      offset: z.number().int(),
      total_exact: z.boolean().openapi({
        description:
          "false when a list filtered by assignee_id, item_id or q has more than 10,000 " +
          "matches (1,000 with q): total is then that lower bound",
      }),
    }),
  })
  .openapi("TaskList");

export type TaskOutput = z.infer<typeof TaskSchema>;
export type CreateTaskInput = z.infer<typeof CreateTaskSchema>;
export type UpdateTaskInput = z.infer<typeof UpdateTaskSchema>;
export type ListTasksInput = z.infer<typeof ListTasksQuery>;
