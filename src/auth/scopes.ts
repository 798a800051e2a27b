/** Resource scopes of the spec; `*` grants all of them. */
export const RESOURCE_SCOPES = [
  "contacts:read",
  "contacts:write",
  "companies:read",
  "companies:write",
  "departments:read",
  "departments:write",
  "doctypes:read",
  "doctypes:write",
  "items:read",
  "items:write",
  "folders:read",
  "folders:write",
  "tags:read",
  "tags:write",
  "drive:read",
  "drive:write",
  "tasks:read",
  "tasks:write",
  // Extension: webhook endpoints (account owner only).
  "webhooks:read",
  "webhooks:write",
  // Extension: channel endpoints, Slack, Teams, Google Chat, Discord, ntfy (account owner only).
  "channels:read",
  "channels:write",
  // Extension: the audit log (account owner only).
  "audit:read",
] as const;

export type ResourceScope = (typeof RESOURCE_SCOPES)[number];
export const ALL_SCOPES = "*";

const KNOWN = new Set<string>([ALL_SCOPES, ...RESOURCE_SCOPES]);

/** Splits a space-separated scope string, dropping duplicates and keeping order. */
export function parseScopes(value: string): string[] {
  return [...new Set(value.split(/\s+/).filter(Boolean))];
}

export function isKnownScope(scope: string): boolean {
  return KNOWN.has(scope);
}

/** Whether a client allowed `allowed` may be granted `requested`. */
export function isScopeAllowed(requested: string, allowed: readonly string[]): boolean {
  if (!isKnownScope(requested)) return false;
  return allowed.includes(ALL_SCOPES) || allowed.includes(requested);
}

export function grants(scopes: ReadonlySet<string>, required: string): boolean {
  return scopes.has(ALL_SCOPES) || scopes.has(required);
}

/**
 * The scopes a request may use: the token's scopes intersected with the client's current allowed
 * scopes, `*` standing for every scope on either side. A client allowed `*` keeps the token's
 * scopes; a `*` token gets the client's current allowed scopes. May be empty.
 */
export function effectiveScopes(tokenScopes: readonly string[], allowed: readonly string[]): string[] {
  if (allowed.includes(ALL_SCOPES)) return [...tokenScopes];
  if (tokenScopes.includes(ALL_SCOPES)) return [...allowed];
  const allowedSet = new Set(allowed);
  return tokenScopes.filter((s) => allowedSet.has(s));
}
