import { z } from "@hono/zod-openapi";
import { Flag, Timestamp, flagField, pageEnvelope, paginationQuery, requiredText, searchQuery } from "../lib/schemas";

export const DepartmentSchema = z
  .object({
    deptid: z.number().int().openapi({ example: 7 }),
    name: z.string().openapi({ example: "Human resources" }),
    isdefault: Flag.openapi({ example: 0, description: "0 or 1; a company has exactly one default department" }),
    add_date: Timestamp,
    docs_used: z.number().int().openapi({ example: 0, description: "Items (documents) in the department" }),
    contacts_used: z.number().int().openapi({
      example: 12,
      description: "Contacts in the department, kept exact on every contact insert, delete and move",
    }),
    storage_used_kb: z
      .number()
      .int()
      .openapi({ example: 0, description: "Drive space used by the department's files, in KB" }),
  })
  .openapi("Department");

const deptName = requiredText("dept_name", 100).openapi({
  example: "Human resources",
  description: "Unique in the company, case-insensitively (Unicode case folding); at most 100 " + "characters.",
});

export const CreateDepartmentSchema = z
  .strictObject({
    dept_name: deptName,
    isdefault: flagField("isdefault")
      .optional()
      .openapi({
        description:
          "1 makes it the company's default department (the previous default is unset in " +
          "the same transaction). Default 0.",
      }),
  })
  .openapi("CreateDepartment");

export const UpdateDepartmentSchema = z
  .strictObject({
    dept_name: deptName.optional(),
    isdefault: flagField("isdefault")
      .optional()
      .openapi({
        description:
          "1 makes it the company's default department (the previous default is unset); 0 " +
          "on the current default is 400.",
      }),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { error: "No updatable fields provided" })
  .openapi("UpdateDepartment");

export const ListDepartmentsQuery = z.object({
  ...paginationQuery(200, 200),
  q: searchQuery.openapi({
    description: "Substring of the department name, compared case-insensitively (Unicode case " + "folding).",
  }),
});

export const DepartmentListEnvelope = pageEnvelope(DepartmentSchema, "DepartmentList");

export type DepartmentOutput = z.infer<typeof DepartmentSchema>;
export type CreateDepartmentInput = z.infer<typeof CreateDepartmentSchema>;
export type UpdateDepartmentInput = z.infer<typeof UpdateDepartmentSchema>;
export type ListDepartmentsInput = z.infer<typeof ListDepartmentsQuery>;
