// Who acts on an item and how: the one list of the ways in (`via`). A later channel (a chat
// integration) adds its name here; the audit log, the webhook payloads and the records' actions
// take it from this list.

/** How an actor acted: `api`, a request with a bearer token; `link`, a recipient on a reminder's page. */
export const VIAS = ["api", "link"] as const;
export type Via = (typeof VIAS)[number];

/** Who acted: a recipient (a contact of the company, from a reminder's page) or an API client. */
export type ActionBy = { type: "contact"; id: number } | { type: "client"; id: string };
