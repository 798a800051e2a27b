// Keyset cursors (`meta.next_cursor`): the last row's sort key, `a~b` in base64url, opaque to clients.
import { badRequest } from "./errors";

export function encodeCursor(...key: Array<string | number>): string {
  return btoa(key.join("~")).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
}

/** The cursor's text when it matches `shape` (its groups), else 400 naming the parameter. */
export function decodeCursor(cursor: string, shape: RegExp): RegExpExecArray {
  let text = "";
  try {
    text = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    // handled below
  }
  const match = shape.exec(text);
  if (!match) throw invalidCursor();
  return match;
}

export const invalidCursor = () => badRequest("cursor is invalid: pass meta.next_cursor of the previous page");
