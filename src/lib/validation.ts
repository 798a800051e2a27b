import type { Context } from "hono";
import type { z } from "zod";
import { echo } from "./echo";
import { badRequest } from "./errors";

type Issue = z.core.$ZodIssue;

/** Unknown field names listed in one message; the rest are counted. */
export const MAX_LISTED_KEYS = 5;

/** The field as the client sent it (keys of records and unknown keys are client input: bounded). */
function fieldName(path: readonly PropertyKey[]): string {
  return echo(path.map(String).join("."));
}

function describeType(expected: string): string {
  switch (expected) {
    case "int":
      return "an integer";
    case "number":
      return "a number";
    case "string":
      return "a string";
    case "boolean":
      return "a boolean";
    case "array":
      return "an array";
    case "object":
      return "an object";
    default:
      return `of type ${expected}`;
  }
}

/** One readable sentence per issue, naming the field as the client sent it. */
export function describeIssue(issue: Issue, input: unknown, target?: string): string {
  const field = fieldName(issue.path);
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.slice(0, MAX_LISTED_KEYS).map((k) => echo(field ? `${field}.${k}` : k));
    const more = issue.keys.length - keys.length;
    return `Unknown field${issue.keys.length > 1 ? "s" : ""}: ${keys.join(", ")}${more > 0 ? ` and ${more} more` : ""}`;
  }
  if (!field) {
    if (issue.code === "invalid_type") return "Request body must be a JSON object";
    return issue.message;
  }
  // Messages set on the schema already name the field.
  if (issue.message.startsWith(`${field} `)) return issue.message;
  if (issue.code === "invalid_type") {
    const provided = valueAt(input, issue.path);
    if (provided === undefined) return `${field} is required`;
    // `?limit=1&limit=2` arrives as an array.
    if (target === "query" && Array.isArray(provided)) return `${field} must be given only once`;
    return `${field} must be ${describeType(issue.expected)}`;
  }
  return `${field}: ${issue.message}`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value: unknown = input;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** The validation hook of every route: failures become Shape B 400s that name the fields. */
export function validationHook(
  result: { success: true } | { success: false; error: z.ZodError; data?: unknown; target?: string },
  _c: Context,
): void {
  if (result.success) return;
  const input = (result as { data?: unknown }).data;
  const messages = [...new Set(result.error.issues.map((issue) => describeIssue(issue, input, result.target)))];
  throw badRequest(messages.join("; "));
}
