import { z } from "@hono/zod-openapi";
import {
  Flag,
  Timestamp,
  flagField,
  idField,
  idQuery,
  searchPageEnvelope,
  paginationQuery,
  requiredText,
  searchQuery,
} from "../lib/schemas";

export const ContactGroupSchema = z
  .object({
    groupid: z.number().int().openapi({ example: 3 }),
    group_name: z.string().openapi({ example: "Suppliers" }),
    deptid: z.number().int().openapi({ example: 1 }),
    isdefault: Flag.openapi({ example: 0, description: "0 or 1; exactly one default per department once one is set" }),
    add_date: Timestamp,
    contacts_count: z.number().int().openapi({ example: 12 }),
  })
  .openapi("ContactGroup");

const groupName = requiredText("group_name", 100).openapi({ example: "Suppliers" });

export const CreateGroupSchema = z
  .strictObject({
    group_name: groupName,
    deptid: idField("deptid").optional().openapi({ description: "Defaults to the company's default department." }),
    isdefault: flagField("isdefault")
      .optional()
      .openapi({ description: "1 makes it the department's default group (the previous default is unset)." }),
  })
  .openapi("CreateContactGroup");

export const UpdateGroupSchema = z
  .strictObject({
    group_name: groupName.optional(),
    deptid: idField("deptid")
      .optional()
      .openapi({ description: "Moves the group, and its contacts, to another department." }),
    isdefault: flagField("isdefault").optional(),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { error: "No updatable fields provided" })
  .openapi("UpdateContactGroup");

export const ListGroupsQuery = z.object({
  ...paginationQuery(200, 200),
  deptid: idQuery("deptid"),
  q: searchQuery.openapi({
    description: "Substring of group_name, compared case-insensitively (Unicode case folding).",
  }),
});

export const GroupListEnvelope = searchPageEnvelope(ContactGroupSchema, "ContactGroupList");

export type ContactGroupOutput = z.infer<typeof ContactGroupSchema>;
export type CreateGroupInput = z.infer<typeof CreateGroupSchema>;
export type UpdateGroupInput = z.infer<typeof UpdateGroupSchema>;
export type ListGroupsInput = z.infer<typeof ListGroupsQuery>;
