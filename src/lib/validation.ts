import type { Context } from "hono";
import type { z } from "zod";
import { badRequest } from "./errors";

type Issue = z.core.$ZodIssue;

function fieldName(path: readonly PropertyKey[]): string {
  return path.map(String).join(".");
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
export function describeIssue(issue: Issue, input: unknown): string {
  const field = fieldName(issue.path);
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((k) => (field ? `${field}.${k}` : k));
    return `Unknown field${keys.length > 1 ? "s" : ""}: ${keys.join(", ")}`;
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
  result: { success: true } | { success: false; error: z.ZodError; data?: unknown },
  _c: Context,
): void {
  if (result.success) return;
  const input = (result as { data?: unknown }).data;
  const messages = [...new Set(result.error.issues.map((issue) => describeIssue(issue, input)))];
  throw badRequest(messages.join("; "));
}
