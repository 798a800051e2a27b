import { and, eq } from "drizzle-orm";
import type { Db } from "./client";
import { departments } from "./schema";

/** The name of the department, and of the contact group, that the service creates as defaults. */
export const DEFAULT_DEPARTMENT_NAME = "General";
export const DEFAULT_GROUP_NAME = "General";

/**
 * Selects the id of department `deptId` of the company, or of the company's default department
 * when `deptId` is undefined. A query builder, so callers can batch it or embed it as a subquery.
 */
export function selectDepartment(db: Db, companyId: number, deptId: number | undefined) {
  const condition =
    deptId !== undefined
      ? and(eq(departments.id, deptId), eq(departments.companyId, companyId))
      : and(eq(departments.companyId, companyId), eq(departments.isDefault, 1));
  return db.select({ id: departments.id }).from(departments).where(condition);
}
