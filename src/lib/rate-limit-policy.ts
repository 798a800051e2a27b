// What a rate-limit policy is (src/lib/rate-limit.ts holds the policies and enforces them) and a
// request's state under one. Apart from that code so that src/env.ts (the request's context
// variables) names PolicyState without importing a module that imports env.ts.

export type PolicyName = "client" | "client-burst" | "company" | "anonymous";
type Binding = "RATE_LIMIT_CLIENT" | "RATE_LIMIT_COMPANY" | "RATE_LIMIT_ANONYMOUS";

export interface Policy {
  name: PolicyName;
  /** Request units allowed per window. */
  quota: number;
  /** Window in seconds (the binding supports 10 and 60). */
  window: 10 | 60;
  /** The Rate Limiting binding sharing the count between isolates; null: counted per isolate only. */
  binding: Binding | null;
  /** What the quota is shared by. */
  partition: string;
}

export interface PolicyState {
  policy: Policy;
  remaining: number;
  /** Seconds until the window resets. */
  reset: number;
  allowed: boolean;
}
