import type { OpenAPIHono } from "@hono/zod-openapi";
import { RESOURCE_SCOPES } from "./auth/scopes";
import type { AppBindings } from "./env";

const DESCRIPTION = `Tracks dated items (expirations, due dates, appointments, events), sends reminders about them,
and keeps the contacts, groups and other records around them.

Authentication: obtain a token from \`POST /v1/oauth/token\` with client credentials and send it as
\`Authorization: Bearer <token>\`. Each operation lists the scope it needs; \`*\` grants every scope.

Errors come in two shapes. Shape A (\`error\`, \`error_description\`, \`required_scope\`) for authentication
and scope problems; Shape B (\`success: false\`, \`msg\`) for everything else. Record timestamps are UTC,
formatted \`YYYY-MM-DD HH:MM:SS\`. Request bodies must be \`application/json\`; unknown body fields are
rejected (400). See docs/api-notes.md for the decisions taken where the contract is silent.`;

/** Builds the OpenAPI 3.0.3 document once per isolate. */
export function buildOpenApiDocument(app: OpenAPIHono<AppBindings>) {
  app.openAPIRegistry.registerComponent("securitySchemes", "oauth2", {
    type: "oauth2",
    description: "Client-credentials grant; the token is a signed JWT valid for 86400 seconds.",
    flows: {
      clientCredentials: {
        tokenUrl: "/v1/oauth/token",
        scopes: Object.fromEntries([["*", "Every scope"], ...RESOURCE_SCOPES.map((s) => [s, `${s.replace(":", " ")} access`])]),
      },
    },
  });
  const document = app.getOpenAPIDocument({
    openapi: "3.0.3",
    info: { title: "Expiry-tracking and reminder API", version: "1.0.0", description: DESCRIPTION },
    servers: [{ url: "/", description: "This deployment" }],
    tags: [
      { name: "Authentication" },
      { name: "Contacts" },
      { name: "Contact groups" },
      { name: "System" },
    ],
  });
  return document;
}
