import { z } from "@hono/zod-openapi";
import {
  Timestamp,
  idField,
  idQuery,
  integerString,
  optionalText,
  searchPageEnvelope,
  paginationQuery,
  requiredText,
  searchQuery,
} from "../lib/schemas";

/** Longest folder name, and longest segment of an item's folder_path. */
export const MAX_FOLDER_NAME = 100;
/** Longest description. */
export const MAX_FOLDER_DESCRIPTION = 1000;

export const FolderSchema = z
  .object({
    folderid: z.number().int().openapi({ example: 12 }),
    parentid: z.number().int().openapi({ example: 0, description: "The parent folder's folderid; 0 is the top level" }),
    folder_name: z.string().openapi({ example: "Permits" }),
    deptid: z.number().int().openapi({ example: 1 }),
    description: z
      .string()
      .openapi({ example: "Building and operating permits", description: 'Free text; "" when none was given' }),
    add_date: Timestamp,
  })
  .openapi("Folder");

const folderName = requiredText("folder_name", MAX_FOLDER_NAME)
  .refine((s) => !s.includes("/"), {
    error: 'folder_name must not contain "/" (it separates the folders of a folder_path)',
  })
  .openapi({
    example: "Permits",
    description: `Unique among the folders of the same parent, case-insensitively (Unicode case folding); at most ${MAX_FOLDER_NAME} characters; no "/".`,
  });

const description = optionalText("description", MAX_FOLDER_DESCRIPTION, { multiline: true }).openapi({
  example: "Building and operating permits",
  description: `At most ${MAX_FOLDER_DESCRIPTION} characters; may span lines.`,
});

/** A parent folder id in a body: a folder of the company, or 0 for the top level. */
const parentId = z
  .number()
  .int({ error: "parent_id must be an integer" })
  .min(0, { error: "parent_id must be 0 (top level) or a folder id" })
  .max(Number.MAX_SAFE_INTEGER, { error: "parent_id is too large" });

export const CreateFolderSchema = z
  .strictObject({
    folder_name: folderName,
    description,
    deptid: idField("deptid")
      .optional()
      .openapi({
        example: 1,
        description:
          "A department of the company (400 otherwise). Defaults to the parent folder's " +
          "department, or for a top-level folder to the company's default department.",
      }),
    parent_id: parentId.optional().openapi({
      example: 0,
      description:
        "The folder to create it in: a folder of the company (400 otherwise), or 0 (the " +
        "default) for the top level.",
    }),
  })
  .openapi("CreateFolder");

export const UpdateFolderSchema = z
  .strictObject({
    folder_name: folderName.optional(),
    description,
    parent_id: parentId.optional().openapi({
      example: 0,
      description:
        "Extension: moves the folder, with its sub-folders and items, under another " +
        "folder of the company (400 otherwise) or to the top level (0). Moving a folder " +
        "under itself or under one of its own sub-folders is 400.",
    }),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { error: "No updatable fields provided" })
  .openapi("UpdateFolder");

export const ListFoldersQuery = z.object({
  ...paginationQuery(200, 200),
  deptid: idQuery("deptid"),
  parent_id: integerString("parent_id must be an integer of at least 0", 0)
    .optional()
    .openapi({
      param: { name: "parent_id", in: "query" },
      example: 0,
      description: "Only the folders directly in this folder; 0 selects the top-level folders.",
    }),
  q: searchQuery.openapi({
    description: "Substring of folder_name, compared case-insensitively (Unicode case folding).",
  }),
});

export const FolderListEnvelope = searchPageEnvelope(FolderSchema, "FolderList");

export type FolderOutput = z.infer<typeof FolderSchema>;
export type CreateFolderInput = z.infer<typeof CreateFolderSchema>;
export type UpdateFolderInput = z.infer<typeof UpdateFolderSchema>;
export type ListFoldersInput = z.infer<typeof ListFoldersQuery>;
